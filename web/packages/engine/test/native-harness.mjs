// Shared by the native-*.test.mjs tests: the wasm engine instantiated in Node (no browser),
// driven through its db_* exports exactly as the worklet drives it, and the native CLI's
// offline render of the same project, read back from its 32-bit float WAV.
//
// Builds what is missing: the wasm (scripts/build-wasm.sh), the CLI (cargo build), and the
// example samples (examples/samples/make.py). Never skips: a missing tool is a failure.

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const repo = resolve(here, '../../../..');
export const wasmPath = resolve(here, '../dist/downbeat_engine.wasm');
export const cli = join(repo, 'target/debug/downbeat');
/** The native side of the control calls' identity tests (crates/engine-wasm/examples/native_script.rs). */
export const nativeScriptBin = join(resolve(repo, process.env.CARGO_TARGET_DIR ?? 'target'), 'debug/examples/native_script');
const NOW = 0xffffffff;

/** Builds the wasm, the CLI and the samples when missing (once per process). */
export function prepare() {
    if (!existsSync(wasmPath)) {
        execFileSync('bash', [resolve(here, '../scripts/build-wasm.sh')], { stdio: 'inherit' });
    }
    if (!existsSync(cli)) {
        execFileSync('cargo', ['build', '-p', 'downbeat-cli', '--bin', 'downbeat'], {
            cwd: repo,
            stdio: 'inherit',
            env: { ...process.env, CARGO_INCREMENTAL: '0' },
        });
    }
    if (!existsSync(join(repo, 'examples/samples/kick.wav'))) {
        execFileSync('python3', [join(repo, 'examples/samples/make.py')], { stdio: 'inherit' });
    }
}

let module;
/** A fresh instance of the engine (one engine per instance, as the ABI says). */
export function instance() {
    module ??= new WebAssembly.Module(readFileSync(wasmPath));
    const { exports } = new WebAssembly.Instance(module, {});
    return new Engine(exports);
}

/** The db_* exports with the bytes moved in and out. */
export class Engine {
    constructor(x) {
        this.x = x;
    }
    bytes(data) {
        const ptr = this.x.db_alloc(data.length);
        new Uint8Array(this.x.memory.buffer, ptr, data.length).set(data);
        return [ptr, data.length];
    }
    call(fn, ...blobs) {
        const args = blobs.flatMap((b) => this.bytes(typeof b === 'string' ? Buffer.from(b) : b));
        const rc = fn(...args);
        for (let i = 0; i < args.length; i += 2) this.x.db_dealloc(args[i], args[i + 1]);
        return rc;
    }
    error() {
        const m = new Uint8Array(this.x.memory.buffer, this.x.db_error_ptr(), this.x.db_error_len());
        return Buffer.from(m).toString('utf8');
    }
    addFile(path, bytes) {
        return this.call(this.x.db_add_file, path, bytes);
    }
    load(text, name) {
        return this.call(this.x.db_load, text, name);
    }
    loadMidi(bytes) {
        return this.call(this.x.db_load_midi, bytes);
    }
    table() {
        const m = new Uint8Array(this.x.memory.buffer, this.x.db_table_ptr(), this.x.db_table_len());
        return JSON.parse(Buffer.from(m).toString('utf8'));
    }
    event(op, id, frame, value, extra = 0, channel = 0) {
        const lo = frame === 'now' ? NOW : frame % 2 ** 32;
        const hi = frame === 'now' ? NOW : Math.floor(frame / 2 ** 32);
        return this.x.db_event(op, id, lo, hi, value, extra, channel);
    }
    /** Renders `frames` frames in project-sized blocks (the last one the remainder), as the
     * offline device does; returns one Float32Array per channel. */
    render(frames) {
        const block = this.x.db_block_size();
        const channels = this.x.db_channels();
        const out = Array.from({ length: channels }, () => new Float32Array(frames));
        for (let at = 0; at < frames; at += block) {
            const n = Math.min(block, frames - at);
            const rc = this.x.db_render(n);
            if (rc !== n) throw new Error(`db_render(${n}) = ${rc}: ${this.error()}`);
            for (let c = 0; c < channels; c++) {
                out[c].set(new Float32Array(this.x.memory.buffer, this.x.db_output_ptr(c), n), at);
            }
        }
        return out;
    }
}

/** Builds the native script runner when missing (web/ci.sh rebuilds it, so it is never stale there). */
export function prepareNativeScript() {
    if (!existsSync(nativeScriptBin)) {
        execFileSync('cargo', ['build', '-p', 'downbeat-engine-wasm', '--example', 'native_script'], {
            cwd: repo,
            stdio: 'inherit',
            env: { ...process.env, CARGO_INCREMENTAL: '0' },
        });
    }
}

/** `project` (a path) rendered natively for `frames` frames, with `calls` (as the JavaScript API
 * takes them: `['transport.loop', 4, 8, { nextBar: true }]`) made through the native
 * `Controller` before the first block; `beats` asks for their frames in the song's tempo map at
 * the end. Gives one Float32Array per channel and the native song's position at the end. */
export function renderNativeScript(project, { frames, calls, beats = [] }) {
    const dir = mkdtempSync(join(tmpdir(), 'downbeat-script-'));
    try {
        const script = join(dir, 'script.json');
        const out = join(dir, 'out.f32');
        writeFileSync(script, JSON.stringify({ frames, calls, beats }));
        const r = spawnSync(nativeScriptBin, [project, script, out], { cwd: repo, encoding: 'utf8' });
        if (r.status !== 0) throw new Error(`native_script ${project}: ${r.stderr}`);
        const summary = JSON.parse(r.stdout);
        const b = readFileSync(out);
        const all = new Float32Array(new Uint8Array(b).buffer); // a copy: aligned
        const ch = summary.channels;
        const channels = Array.from({ length: ch }, (_, c) => {
            const x = new Float32Array(frames);
            for (let i = 0; i < frames; i++) x[i] = all[i * ch + c];
            return x;
        });
        return { ...summary, channels };
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}

/** Reads a 32-bit float WAV (as the CLI writes it) into one Float32Array per channel. */
export function readWav(path) {
    const b = readFileSync(path);
    if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE') {
        throw new Error(`${path}: not a RIFF WAVE file`);
    }
    let channels = 0;
    let format = 0;
    let bits = 0;
    for (let at = 12; at + 8 <= b.length; ) {
        const id = b.toString('ascii', at, at + 4);
        const size = b.readUInt32LE(at + 4);
        const body = at + 8;
        if (id === 'fmt ') {
            format = b.readUInt16LE(body);
            channels = b.readUInt16LE(body + 2);
            bits = b.readUInt16LE(body + 14);
            if (format === 0xfffe) format = b.readUInt16LE(body + 24);
        } else if (id === 'data') {
            if (format !== 3 || bits !== 32) throw new Error(`${path}: not 32-bit float`);
            const frames = Math.floor(size / 4 / channels);
            const out = Array.from({ length: channels }, () => new Float32Array(frames));
            for (let i = 0; i < frames; i++) {
                for (let c = 0; c < channels; c++) {
                    out[c][i] = b.readFloatLE(body + (i * channels + c) * 4);
                }
            }
            return out;
        }
        at = body + size + (size % 2);
    }
    throw new Error(`${path}: no data chunk`);
}

/** `downbeat run PROJECT --device offline [--seconds S] [--midi F] [--replay R] --out F.wav`,
 * read back; throws with the CLI's stderr when it fails. */
export function renderNative(project, { seconds, midi, replay } = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'downbeat-native-'));
    try {
        const out = join(dir, 'out.wav');
        const args = ['run', project, '--device', 'offline', '--out', out, '--json'];
        if (seconds !== undefined) args.push('--seconds', String(seconds));
        if (midi) args.push('--midi', midi);
        if (replay) {
            const file = join(dir, 'events.jsonl');
            writeFileSync(file, replay.map((e) => JSON.stringify(e)).join('\n') + '\n');
            args.push('--replay', file);
        }
        const r = spawnSync(cli, args, { cwd: repo, encoding: 'utf8' });
        if (r.status !== 0) throw new Error(`downbeat ${args.join(' ')}: ${r.stderr}`);
        return readWav(out);
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}

/** What `downbeat run PROJECT --device offline` prints on stderr when it refuses it. */
export function nativeError(project) {
    const r = spawnSync(cli, ['run', project, '--device', 'offline', '--seconds', '0.01'], {
        cwd: repo,
        encoding: 'utf8',
    });
    return { status: r.status, stderr: r.stderr };
}

/** The sample paths a project names (`"....wav"` strings), as written. */
export function samplePaths(text) {
    return [...text.matchAll(/"([^"]+\.(?:wav|flac|ogg|mp3))"/g)].map((m) => m[1]);
}

/** Renders `project` (a path relative to the repository) in a fresh wasm engine: its samples
 * handed over as bytes by the paths it writes, the MIDI file put on the timeline, `events`
 * (`[op, id, frame, value, extra, channel]`, ids resolved by `resolveEvents(table)`) queued
 * first. Length: `seconds` as the CLI rounds them, else the MIDI file's length. */
export function renderWasm(project, { seconds, midi, events } = {}) {
    const engine = instance();
    const path = join(repo, project);
    const text = readFileSync(path, 'utf8');
    for (const p of samplePaths(text)) {
        // A refused project may name a file nobody made (player.toml's); it never gets read.
        if (!existsSync(resolve(dirname(path), p))) continue;
        if (engine.addFile(p, readFileSync(resolve(dirname(path), p))) !== 0) {
            throw new Error(`db_add_file ${p}: ${engine.error()}`);
        }
    }
    const rc = engine.load(text, project);
    if (rc !== 0) return { rc, error: engine.error() };
    if (midi && engine.loadMidi(readFileSync(join(repo, midi))) !== 0) {
        throw new Error(`db_load_midi: ${engine.error()}`);
    }
    for (const e of events ? events(engine.table()) : []) {
        const r = engine.event(...e);
        if (r !== 0) throw new Error(`db_event ${e}: ${r} ${engine.error()}`);
    }
    const rate = engine.x.db_sample_rate();
    const frames =
        seconds !== undefined ? Math.ceil(seconds * rate) : Math.max(1, engine.x.db_midi_frames());
    return { rc, engine, out: engine.render(frames) };
}

/** Compares two renders: lengths, the largest difference, the bit-identical samples. */
export function compare(wasm, native) {
    const result = {
        channels: [wasm.length, native.length],
        frames: [wasm[0]?.length, native[0]?.length],
        maxDiff: 0,
        at: -1,
        identical: 0,
        total: 0,
    };
    for (let c = 0; c < Math.min(wasm.length, native.length); c++) {
        const a = new Uint32Array(wasm[c].buffer);
        const b = new Uint32Array(native[c].buffer);
        for (let i = 0; i < Math.min(a.length, b.length); i++) {
            result.total++;
            if (a[i] === b[i]) {
                result.identical++;
                continue;
            }
            const d = Math.abs(wasm[c][i] - native[c][i]);
            if (!(d <= result.maxDiff)) {
                result.maxDiff = d;
                result.at = i;
            }
        }
    }
    return result;
}

/** A temporary folder for generated projects, removed by the returned function. */
export function scratch() {
    const dir = mkdtempSync(join(repo, 'target', 'native-identity-'));
    return { dir, rel: (p) => relative(repo, p), done: () => rmSync(dir, { recursive: true, force: true }) };
}
