#!/usr/bin/env node
// CPU cost of Karplus-Strong strings, offline in Node: the wasm engine, with the strings as
// voices of `strings` nodes (the demo's project, web/demo/projects.js `stringsProject`) and as
// one `karplus` node each (`karplusProject`, the demo's project until 2026-11-29), against
// the hand-written JavaScript processor
// (web/demo/karplus-processor.js, its own process() loop), both strummed like the demo (every
// string at once, strength 0.5..1, again every `--strum-ms`) and rendered in 128-frame blocks.
// Prints microseconds per 128 frames per string for each, rounds rotating the order so a
// loaded machine slows all alike; the ratios are the numbers to read, the median over rounds.
//
//   node web/packages/engine/scripts/profile-karplus.mjs [--strings 1000] [--seconds 2]
//        [--rounds 5] [--strum-ms 200] [--wasm PATH] [--emit-project FILE]
//
// `--emit-project FILE` writes the project and exits, for the native side of the same
// measurement: `downbeat run FILE --device offline --threads 1 --seconds S` (its strings are
// silent until strummed, so pass a project whose strings ring: the script's strums are
// note ons, which the CLI does not send; see the report's command for a ringing variant).
// On a loaded machine the best round (the minimum) is steadier than the median; both are
// printed.
//
// Builds the wasm (scripts/build-wasm.sh) when it is missing. `node --cpu-prof` on this script
// profiles the wasm too.

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { karplusProject, stringBank, stringName, stringNote, stringsProject } from '../../../demo/projects.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../../../..');

function args() {
    const o = { strings: 1000, seconds: 2, rounds: 5, strumMs: 200, wasm: resolve(here, '../dist/downbeat_engine.wasm') };
    const a = process.argv.slice(2);
    for (let i = 0; i < a.length; i += 2) {
        const [k, v] = [a[i], a[i + 1]];
        if (v === undefined) throw new Error(`${k}: needs a value`);
        if (k === '--strings') o.strings = +v;
        else if (k === '--seconds') o.seconds = +v;
        else if (k === '--rounds') o.rounds = +v;
        else if (k === '--strum-ms') o.strumMs = +v;
        else if (k === '--wasm') o.wasm = resolve(v);
        else if (k === '--emit-project') o.emit = resolve(v);
        else throw new Error(`unknown option ${k}`);
    }
    for (const k of ['strings', 'seconds', 'rounds', 'strumMs']) {
        if (!(o[k] > 0)) throw new Error(`--${k}: expected a positive number, got ${o[k]}`);
    }
    return o;
}

const RATE = 48000;
const BLOCK = 128;
/** Strengths of every strum, the same for both sides: a seeded xorshift, 0.5..1. */
function strengths(n, strums) {
    let x = 0x12345678;
    const s = new Float32Array(n * strums);
    for (let k = 0; k < s.length; k++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        s[k] = 0.5 + 0.5 * ((x >>> 0) / 2 ** 32);
    }
    return s;
}

/** The wasm engine playing `project` ('strings' or 'karplus'); nanoseconds. */
function wasmSide(o, blocks, strumEvery, strength, project) {
    const { exports: x } = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(o.wasm)), {});
    const options = { sampleRate: RATE, blockSize: BLOCK };
    const text = Buffer.from(project === 'strings' ? stringsProject(o.strings, options) : karplusProject(o.strings, options));
    const instrument = project === 'strings' ? stringBank : stringName;
    const name = Buffer.from('karplus.toml');
    const put = (b) => {
        const p = x.db_alloc(b.length);
        new Uint8Array(x.memory.buffer, p, b.length).set(b);
        return p;
    };
    const rc = x.db_load(put(text), text.length, put(name), name.length);
    const error = () => Buffer.from(new Uint8Array(x.memory.buffer, x.db_error_ptr(), x.db_error_len())).toString();
    if (rc !== 0) throw new Error(`db_load: ${rc}: ${error()}`);
    const table = JSON.parse(Buffer.from(new Uint8Array(x.memory.buffer, x.db_table_ptr(), x.db_table_len())).toString());
    const id = new Map(table.instruments.map((t) => [t.node, t.id]));
    const ids = Array.from({ length: o.strings }, (_, i) => id.get(instrument(i)));
    let sum = 0;
    const t0 = process.hrtime.bigint();
    for (let b = 0, strum = 0; b < blocks; b++) {
        if (b % strumEvery === 0) {
            for (let i = 0; i < o.strings; i++) {
                // Velocity 0..1 as the demo sends it (0 would be a note off).
                const velocity = Math.max(1 / 127, Math.min(1, strength[strum * o.strings + i]));
                const r = x.db_event(4, ids[i], 0xffffffff, 0xffffffff, stringNote(i), velocity, 0);
                if (r !== 0) throw new Error(`note on ${i}: ${r}: ${error()}`);
            }
            strum++;
        }
        if (x.db_render(BLOCK) !== BLOCK) throw new Error(`db_render: ${error()}`);
        sum += x.db_peak(0);
    }
    const ns = Number(process.hrtime.bigint() - t0);
    if (!(sum > 0)) throw new Error('the wasm engine rendered silence');
    return ns;
}

let Processor;
async function loadProcessor() {
    // The worklet file as it ships, with the worklet's globals stubbed (postmessage mode: the
    // ring module is not needed; the port's per-block frame goes nowhere).
    const src = readFileSync(resolve(repo, 'web/demo/karplus-processor.js'), 'utf8').replace(/^import .*$/m, '');
    const stub = `const sampleRate = ${RATE};
class AudioWorkletProcessor { constructor() { this.port = { postMessage() {}, onmessage: null }; } }
let registered; function registerProcessor(_n, c) { registered = c; }
const ParameterReader = null, RingBuffer = null;\n`;
    const url = `data:text/javascript,${encodeURIComponent(stub + src + '\nexport { registered };')}`;
    Processor = (await import(url)).registered;
}

/** A JavaScript processor `p` (the demo's, or `SameAlgorithm`) strummed like the demo; ns. */
function jsSide(o, blocks, strumEvery, strength, p, what) {
    const out = [[new Float32Array(BLOCK)]];
    let sum = 0;
    const t0 = process.hrtime.bigint();
    for (let b = 0, strum = 0; b < blocks; b++) {
        if (b % strumEvery === 0) {
            for (let i = 0; i < o.strings; i++) p.strum(i, strength[strum * o.strings + i]);
            strum++;
        }
        p.process([], out);
        sum += Math.abs(out[0][0][0]);
    }
    const ns = Number(process.hrtime.bigint() - t0);
    if (!(sum > 0)) throw new Error(`${what} rendered silence`);
    return ns;
}

/**
 * The `karplus` node's algorithm (crates/nodes/src/string_loop.rs) written as the demo's
 * processor is written (one loop per string over the block, the strings' state in typed
 * arrays, each string's peak kept for the page): a delay line of `N` samples in `f64`, the
 * two-point average, the fractional allpass that tunes the loop exactly, the flush of tiny
 * loop samples to zero, the loss, and the output rounded to `f32` and flushed below the
 * engine's `TINY`. The same work as the wasm strings, in JavaScript: what each algorithm
 * costs, apart from the language.
 */
class SameAlgorithm {
    constructor(n) {
        this.n = n;
        this.off = new Int32Array(n);
        this.len = new Int32Array(n);
        this.pos = new Int32Array(n);
        this.c = new Float64Array(n);
        this.x1 = new Float64Array(n);
        this.y1 = new Float64Array(n);
        let total = 0;
        for (let i = 0; i < n; i++) {
            const f = 440 * 2 ** ((stringNote(i) - 69) / 12);
            const period = RATE / f;
            const whole = Math.floor(period - 0.5 - 0.1);
            const fraction = period - 0.5 - whole;
            const w = (2 * Math.PI * f) / RATE;
            this.c[i] = Math.sin(((1 - fraction) * w) / 2) / Math.sin(((1 + fraction) * w) / 2);
            this.off[i] = total;
            this.len[i] = whole + 1;
            total += whole + 1;
        }
        this.lines = new Float64Array(total);
        this.mix = new Float32Array(BLOCK);
        this.amps = new Float32Array(n);
        this.seed = 0x9e3779b9 | 0;
    }

    strum(i, strength) {
        const base = this.off[i];
        const end = base + this.len[i];
        let x = this.seed;
        let sum = 0;
        for (let k = base; k < end; k++) {
            x ^= x << 13;
            x ^= x >>> 17;
            x ^= x << 5;
            this.lines[k] = (x >>> 8) / 8388608 - 1;
            sum += this.lines[k];
        }
        const mean = sum / (end - base);
        for (let k = base; k < end; k++) this.lines[k] = (this.lines[k] - mean) * strength;
        this.seed = x;
        this.pos[i] = 0;
        this.x1[i] = 0;
        this.y1[i] = 0;
    }

    /** As the demo's processor: `outputs[0][0]` is the block's one channel. */
    process(_inputs, outputs) {
        const out = outputs[0][0];
        const mix = this.mix;
        mix.fill(0);
        const { lines, off, len, pos, c, x1, y1, amps } = this;
        const decay = 0.996;
        const TINY = 7.888609e-31;
        for (let s = 0; s < this.n; s++) {
            const base = off[s];
            const l = len[s];
            const cs = c[s];
            let p = pos[s];
            let xs = x1[s];
            let ys = y1[s];
            let amp = 0;
            for (let k = 0; k < BLOCK; k++) {
                const q = p + 1 === l ? 0 : p + 1;
                const averaged = 0.5 * (lines[base + p] + lines[base + q]);
                let y = cs * averaged + xs - cs * ys;
                if (Math.abs(y) < 1e-30) y = 0;
                xs = averaged;
                ys = y;
                const v = decay * y;
                lines[base + p] = v;
                p = q;
                let o = Math.fround(v);
                if (Math.abs(o) < TINY) o = 0;
                mix[k] += o;
                const a = o < 0 ? -o : o;
                if (a > amp) amp = a;
            }
            pos[s] = p;
            x1[s] = xs;
            y1[s] = ys;
            amps[s] = amp;
        }
        const g = 0.25 / Math.sqrt(this.n);
        for (let k = 0; k < BLOCK; k++) out[k] = g * mix[k];
    }
}

const o = args();
if (o.emit) {
    writeFileSync(o.emit, stringsProject(o.strings, { sampleRate: RATE, blockSize: BLOCK }));
    process.exit(0);
}
if (!existsSync(o.wasm)) execFileSync('bash', [resolve(here, 'build-wasm.sh')], { stdio: 'inherit' });
await loadProcessor();
const blocks = Math.ceil((o.seconds * RATE) / BLOCK);
const strumEvery = Math.max(1, Math.round((o.strumMs / 1000) * RATE / BLOCK));
const strength = strengths(o.strings, Math.ceil(blocks / strumEvery) + 1);
const per = (ns) => ns / 1000 / blocks / o.strings;
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
console.log(`${o.strings} strings, ${blocks} blocks of ${BLOCK} (${o.seconds} s), strum every ${strumEvery} blocks; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
const sides = {
    strings: () => wasmSide(o, blocks, strumEvery, strength, 'strings'),
    karplus: () => wasmSide(o, blocks, strumEvery, strength, 'karplus'),
    js: () => jsSide(o, blocks, strumEvery, strength, new Processor({ processorOptions: { mode: 'postmessage', strings: o.strings } }), 'the JavaScript processor'),
    same: () => jsSide(o, blocks, strumEvery, strength, new SameAlgorithm(o.strings), 'our algorithm in JavaScript'),
};
const names = Object.keys(sides);
const us = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < o.rounds; r++) {
    // Rotate which side goes first, so a change in load hits every side.
    for (let k = 0; k < names.length; k++) {
        const n = names[(r + k) % names.length];
        us[n].push(per(sides[n]()));
    }
    const last = (n) => us[n].at(-1);
    console.log(`round ${r + 1}: wasm strings ${last('strings').toFixed(4)} us, wasm karplus ${last('karplus').toFixed(4)} us, js ${last('js').toFixed(4)} us, js with our algorithm ${last('same').toFixed(4)} us per string per block (js/strings ${(last('js') / last('strings')).toFixed(2)}, same/strings ${(last('same') / last('strings')).toFixed(2)}, karplus/strings ${(last('karplus') / last('strings')).toFixed(2)})`);
}
const min = (v) => Math.min(...v);
const ratio = (a, b) => median(us[a].map((v, i) => v / us[b][i]));
const fixed = (n) => us[n].map((v) => v.toFixed(4)).join(' ');
console.log(`best: wasm strings ${min(us.strings).toFixed(4)} us, wasm karplus ${min(us.karplus).toFixed(4)} us, js ${min(us.js).toFixed(4)} us, js with our algorithm ${min(us.same).toFixed(4)} us per string per block`);
console.log(`median: wasm strings ${median(us.strings).toFixed(4)} us [${fixed('strings')}], wasm karplus ${median(us.karplus).toFixed(4)} us, js ${median(us.js).toFixed(4)} us, js with our algorithm ${median(us.same).toFixed(4)} us per string per block`);
console.log(`ratios (median of per-round ratios, ${o.rounds} rounds): js/strings ${ratio('js', 'strings').toFixed(2)} (target >= 2), js/karplus ${ratio('js', 'karplus').toFixed(2)}, same/strings ${ratio('same', 'strings').toFixed(2)}, same/js ${ratio('same', 'js').toFixed(2)}, karplus/strings ${ratio('karplus', 'strings').toFixed(2)}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
