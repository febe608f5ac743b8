// Musical time from JavaScript against the native engine: a metronome project with a `[tempo]`
// ramp and a loop, rendered by `renderOffline` (the package's own, through an
// OfflineAudioContext stand-in and the real worklet processor) with transport calls
// (`engine.transport.loop/tempo/stop/locate/unloop/play`) and events on beats (`noteOn(...,
// { beat })`, `{ nextBeat }`, `{ nextBar }`, `setParam`/`ramp` on beats), equals bit for bit the
// native `Engine` making the same calls through its `Controller`
// (crates/engine-wasm/examples/native_script.rs); the clicks' onsets in the audio land on the
// frames the native tempo map gives (through the loop's passes, the live tempo change, a stop, a
// locate and play on frames); `meters()` reports where the native song ends; bad calls throw
// before anything is sent.
//
//   node --test web/packages/engine/test/native-transport.test.mjs

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Controller, DownbeatEngine, renderOffline } from '@downbeat/engine';
import { prepare, prepareNativeScript, renderNativeScript, scratch, wasmPath } from './native-harness.mjs';
import { processorOptions } from './util.mjs';
import { FakeOfflineAudioContext, fakeContext, quanta } from './worklet-stub.mjs';

globalThis.OfflineAudioContext = FakeOfflineAudioContext;

before(() => {
    prepare();
    prepareNativeScript();
});

const SONG =
    'sample_rate = 48000\nblock_size = 128\n' +
    'edges = ["click -> mix", "keys -> mix", "mix -> out"]\n' +
    '[tempo]\nbpm = 100\nchanges = [{ beat = 4, bpm = 140, ramp = 8 }]\n' +
    '[transport]\nloop = [0, 16]\n' +
    '[nodes.click]\ntype = "metronome"\ngain = 0.5\n' +
    '[nodes.keys]\ntype = "synth"\nrelease = 0.01\n' +
    '[nodes.mix]\ntype = "mix"\n[nodes.out]\ntype = "output"\n';

const S = 500_000; // the stop's frame
const P = S + 30_000; // play's
const SECONDS = 20;
const FRAMES = SECONDS * 48_000;

// Each call as the JavaScript API takes it, and as native_script makes it natively.
const CALLS = [
    ['noteOn', 72, 0.75, { beat: 2.5 }],
    ['noteOff', 72, { beat: 2.75 }],
    ['noteOn', 64, 0.625, { instrument: 'keys', channel: 1, nextBeat: true }],
    ['noteOff', 64, { instrument: 'keys', channel: 1, beat: 1.25 }],
    ['setParam', 'click', 'gain', 0.25, { nextBar: true, smooth: false }],
    ['setParam', 'click', 'gain', 0.4, { beat: 9.5 }],
    ['ramp', 'click', 'gain', 0.5, 0.05, { beat: 12 }],
    ['transport.loop', 4, 8, { nextBar: true }],
    ['transport.tempo', 120, 2, { beat: 6 }],
    ['transport.stop', { frame: S }],
    ['transport.locate', 1, { frame: S + 10_000 }],
    ['transport.unloop', { frame: S + 10_000 }],
    ['transport.play', { frame: P }],
    ['transport.tempo', 90, { beat: 14 }],
];

/** Makes one call of `CALLS` on a DownbeatEngine (or a Controller). */
function call(engine, [name, ...args]) {
    if (name.startsWith('transport.')) return engine.transport[name.slice('transport.'.length)](...args);
    return engine[name](...args);
}

/** The frames where a sound starts on `channel`: a sample that is not zero after at least 1,000
 * zeros (a click lasts 150 ms, and the beats here are further apart), or the first sample. */
function onsets(channel) {
    let zeros = Infinity;
    const found = [];
    channel.forEach((x, i) => {
        if (x === 0) zeros++;
        else {
            if (zeros >= 1000) found.push(i);
            zeros = 0;
        }
    });
    return found;
}

/** The first sample whose bits differ, as text, or null. */
function firstDifference(a, b) {
    for (let c = 0; c < Math.min(a.length, b.length); c++) {
        const x = new Uint32Array(a[c].buffer, a[c].byteOffset, a[c].length);
        const y = new Uint32Array(b[c].buffer, b[c].byteOffset, b[c].length);
        for (let i = 0; i < Math.min(x.length, y.length); i++) {
            if (x[i] !== y[i]) return `channel ${c}, frame ${i}: web ${a[c][i]} against native ${b[c][i]}`;
        }
    }
    return null;
}

const module = () => new WebAssembly.Module(readFileSync(wasmPath));

describe('renderOffline with transport calls and events on beats', () => {
    const s = scratch();
    after(s.done);
    let project;
    let web;
    let native;
    before(async () => {
        const file = join(s.dir, 'song.toml');
        writeFileSync(file, SONG);
        project = s.rel(file);
        let engine = null;
        web = await renderOffline(SONG, {
            name: 'song.toml',
            seconds: SECONDS,
            wasm: module(),
            control(e) {
                engine = e;
                for (const c of CALLS) assert.equal(call(e, c), true);
            },
        });
        web.meters = engine.meters();
        // The beats whose frames the clicks are checked against, in the song's map at the end
        // (the project's ramp, then the live ramp from beat 6 and the step on beat 14).
        const beats = Array.from({ length: 24 }, (_, b) => b);
        native = renderNativeScript(project, { frames: FRAMES, calls: CALLS, beats });
    });

    test('the samples equal the native engine making the same calls, bit for bit', () => {
        assert.equal(web.frames, FRAMES);
        assert.equal(web.channels.length, native.channels.length);
        assert.equal(firstDifference(web.channels, native.channels), null);
        assert.ok(web.channels[0].some((x) => x !== 0));
    });

    test("the clicks' onsets land on the frames of the native tempo map", () => {
        const f = native.beat_frames; // f[b]: the song's frame of beat b
        // The first pass, to beat 8 (the loop from 4 to 8 is set on the bar line at beat 4),
        // then the loop's passes until the stop; after play, beat 1 and on from frame P.
        const want = [0, 1, 2, 3, 4, 5, 6, 7].map((b) => f[b]);
        const pass = f[8] - f[4];
        for (let start = f[8]; start < S; start += pass) {
            for (let b = 4; b < 8; b++) if (start + f[b] - f[4] < S) want.push(start + f[b] - f[4]);
        }
        const passes = Math.ceil((want.length - 8) / 4); // passes begun before the stop
        for (let b = 1; P + f[b] - f[1] < FRAMES; b++) want.push(P + f[b] - f[1]);
        // The notes: 72 on beat 2.5 (on its own), 64 on the next beat (with beat 1's click).
        const clicks = new Set(want);
        const got = onsets(web.channels[0]);
        const notes = got.filter((i) => !clicks.has(i));
        assert.deepEqual(
            got.filter((i) => clicks.has(i)),
            want,
            `every click on its beat's frame (${want.length}, ${passes} passes of the loop)`,
        );
        assert.ok(passes >= 3, `the loop wrapped: ${passes} passes`);
        const note72 = Math.round(f[2] + 0.5 * (f[3] - f[2])); // beat 2.5, at 100 bpm
        assert.deepEqual(notes, [note72], "the note on beat 2.5 is the only other onset, on that beat's frame");
        assert.deepEqual(onsets(native.channels[0]), got, "the native render's onsets");
        assert.ok(web.channels[0].subarray(S + 7200, P).every((x) => x === 0), 'silent while stopped');
    });

    test("meters() reports where the native song ends", () => {
        const m = web.meters;
        assert.equal(m.position, FRAMES);
        assert.equal(m.playing, native.playing);
        assert.equal(m.beat, native.beat);
        assert.equal(m.bar, native.bar);
        assert.equal(m.barBeat, native.bar_beat);
        assert.equal(m.bpm, 90, 'the tempo step on beat 14');
        assert.equal(m.bpm, native.bpm);
        assert.ok(m.beat > 14);
    });
});

describe('the transport and beat options on a live engine', () => {
    test('each call writes one record, timed by a beat, the next beat or bar, a frame or now', async () => {
        const context = fakeContext(48000);
        const engine = await DownbeatEngine.create(context, SONG, { wasm: module(), name: 'song.toml' });
        try {
            const node = context.nodes[0];
            quanta(node, 2, [[], []]);
            const m = engine.meters();
            assert.equal(m.playing, true);
            assert.equal(m.bpm, 100);
            assert.equal(m.bar, 0);
            engine.transport.stop({ nextBeat: true });
            quanta(node, 250, [[], []]); // 32,000 frames: past beat 1 (28,800)
            engine.meters();
            assert.equal(m.playing, false, 'stopped on beat 1');
            assert.equal(m.beat, 1);
            engine.transport.locate(9);
            engine.transport.tempo(150);
            engine.transport.play();
            quanta(node, 4, [[], []]);
            engine.meters();
            assert.equal(m.playing, true);
            assert.equal(m.bar, 2);
            assert.equal(m.barBeat, 8);
            assert.ok(m.beat > 9 && m.beat < 9.1, `${m.beat}`);
            assert.equal(m.bpm, 150);
            assert.equal(m.eventErrors, 0);
        } finally {
            context.close();
        }
    });

    test('bad calls throw RangeError before anything is sent', () => {
        const table = { params: [], instruments: [{ id: 0, node: 'keys' }], sample_rate: 48000, block_size: 128, channels: 2 };
        const options = processorOptions({ params: 0 });
        const c = new Controller({ control: options.control, table });
        const room = c.room();
        const refusals = [
            [() => c.transport.loop(4, 2), /transport\.loop: a loop from beat 4 to beat 2 must end at least one frame after it starts/],
            [() => c.transport.loop(4, 4), /must end at least one frame after it starts/],
            [() => c.transport.loop(-1, 4), /transport\.loop: start must be a number of beats from 0 up, got -1/],
            [() => c.transport.tempo(0), /transport\.tempo: a tempo of 0 bpm over 0 beats: the tempo must be above 0 and at most 999/],
            [() => c.transport.tempo(1000, 1), /a tempo of 1000 bpm over 1 beats/],
            [() => c.transport.tempo(120, -2), /a tempo of 120 bpm over -2 beats/],
            [() => c.transport.locate(NaN), /transport\.locate: beat must be a number of beats from 0 up, got NaN/],
            [() => c.transport.play({ beat: -1 }), /transport\.play: beat must be a number of beats from 0 up, got -1/],
            [() => c.noteOn(60, 0.75, { beat: Infinity }), /note on: beat must be a number of beats from 0 up/],
            [() => c.noteOn(60, 0.75, { beat: 4, frame: 10 }), /note on: give one of frame, beat, nextBeat and nextBar, not 2/],
            [() => c.transport.stop({ nextBar: true, nextBeat: true }), /give one of frame, beat, nextBeat and nextBar, not 2/],
        ];
        for (const [f, message] of refusals) assert.throws(f, (e) => e instanceof RangeError && message.test(e.message));
        assert.equal(c.room(), room, 'nothing was written');
    });

    test('the record words: BEAT added to the op, the beat as f64 words, NEXT_BEAT and NEXT_BAR', async () => {
        const { BEAT, NEXT_BAR, NEXT_BEAT, NOW, Op, CONTROL_RECORD } = await import('@downbeat/engine');
        const { RingBuffer } = await import('@downbeat/ringbuf');
        const table = { params: [], instruments: [], sample_rate: 48000, block_size: 128, channels: 2 };
        const options = processorOptions({ params: 0 });
        const c = new Controller({ control: options.control, table });
        c.transport.loop(2, 6.5, { beat: 1.5 });
        c.transport.tempo(123.5, 2, { nextBar: true });
        c.transport.unloop({ nextBeat: true });
        c.transport.play({ frame: 2 ** 32 + 5 });
        c.transport.stop();
        const ring = new RingBuffer(options.control, Uint32Array);
        const r = new Uint32Array(CONTROL_RECORD);
        const f = new Float32Array(r.buffer);
        const words = new Uint32Array(Float64Array.of(1.5).buffer);
        const got = [];
        while (ring.pop(r) === CONTROL_RECORD) got.push([r[0], r[2], r[3], f[4], f[5]]);
        assert.deepEqual(got, [
            [Op.Loop | BEAT, words[0], words[1], 2, 6.5],
            [Op.Tempo | BEAT, NEXT_BAR, NOW, 123.5, 2],
            [Op.Unloop | BEAT, NEXT_BEAT, NEXT_BEAT, 0, 0],
            [Op.Play, 5, 1, 0, 0],
            [Op.Stop, NOW, NOW, 0, 0],
        ]);
    });
});

test('a control callback that throws rejects the render with its error, and the process can end', () => {
    // Run in a process of its own: a render left unfinished keeps the context's worklet, and
    // with it the process, alive, which no assertion in this one could see.
    const s = scratch();
    try {
        const url = (p) => new URL(p, import.meta.url).href;
        const script = join(s.dir, 'throwing-control.mjs');
        writeFileSync(
            script,
            `import { readFileSync } from 'node:fs';
import { renderOffline } from ${JSON.stringify(url('../dist/index.js'))};
import { FakeOfflineAudioContext } from ${JSON.stringify(url('./worklet-stub.mjs'))};
globalThis.OfflineAudioContext = FakeOfflineAudioContext;
const wasm = new WebAssembly.Module(readFileSync(${JSON.stringify(wasmPath)}));
const boom = new RangeError('boom from control');
try {
    await renderOffline(${JSON.stringify(SONG)}, { seconds: 0.1, wasm, control() { throw boom; } });
    console.log('resolved');
} catch (e) {
    console.log(e === boom ? 'rejected with the error' : 'rejected with ' + e);
}
`,
        );
        const run = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 60_000 });
        assert.equal(run.signal, null, `still running after 60 s: ${run.stdout}${run.stderr}`);
        assert.equal(run.stdout.trim(), 'rejected with the error', run.stderr);
        assert.equal(run.status, 0, run.stderr);
    } finally {
        s.done();
    }
});
