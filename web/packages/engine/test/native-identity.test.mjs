// The wasm engine, instantiated in Node, against `downbeat run --device offline`: every example
// project the browser can run and one project per built-in node type render to the same length
// and bit for bit, every sample of every channel (docs/ARCHITECTURE.md, "The same arithmetic on
// every target"); the projects that need the operating system are refused naming the node; a
// project with an error gives the CLI's message; an event queued at frame N shows at frame N,
// as a native --replay of it does, again bit for bit.
//
//   node --test web/packages/engine/test/native-identity.test.mjs

import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { compare, nativeError, prepare, renderNative, renderWasm, repo, scratch } from './native-harness.mjs';

const SECONDS = 2;

before(prepare);

/** The first sample whose bits differ (a difference of one ulp, or -0 against +0, counts),
 * as `channel c, frame i: wasm x (bits) against native y (bits)`; null when there is none. */
function firstDifference(wasm, native) {
    const hex = (x) => new Uint32Array(Float32Array.of(x).buffer)[0].toString(16).padStart(8, '0');
    for (let c = 0; c < Math.min(wasm.length, native.length); c++) {
        const a = new Uint32Array(wasm[c].buffer, wasm[c].byteOffset, wasm[c].length);
        const b = new Uint32Array(native[c].buffer, native[c].byteOffset, native[c].length);
        for (let i = 0; i < Math.min(a.length, b.length); i++) {
            if (a[i] !== b[i]) {
                const [x, y] = [wasm[c][i], native[c][i]];
                return `channel ${c}, frame ${i}: wasm ${x} (0x${hex(x)}) against native ${y} (0x${hex(y)})`;
            }
        }
    }
    return null;
}

/** Renders both ways and checks length and bits; logs the identity count. */
function same(project, options = {}) {
    const wasm = renderWasm(project, options);
    assert.equal(wasm.rc, 0, `db_load ${project}: ${wasm.error}`);
    const native = renderNative(project, options);
    const r = compare(wasm.out, native);
    console.log(
        `${project}: ${r.frames[1]} frames x ${r.channels[1]} ch, ${r.identical}/${r.total} ` +
            `bit-identical, largest difference ${r.maxDiff.toExponential(3)}` +
            (r.at >= 0 ? ` at frame ${r.at}` : ''),
    );
    assert.deepEqual(r.channels, [native.length, native.length], `${project}: channels`);
    assert.deepEqual(r.frames, [native[0].length, native[0].length], `${project}: frames`);
    assert.ok(r.total > 0, `${project}: rendered nothing`);
    const first = firstDifference(wasm.out, native);
    assert.equal(first, null, `${project}: ${r.total - r.identical} of ${r.total} samples differ; the first: ${first}`);
    assert.ok(
        wasm.out.some((ch) => ch.some((x) => x !== 0)),
        `${project}: the render is silent, which proves nothing`,
    );
    return { wasm, native, r };
}

// Every example project is compared here or refused naming its node (the check below).
const COMPARED = {
    'hello.toml': ['hello', { seconds: SECONDS }],
    'synth.toml': ['synth with tune.mid (the run lasts the file)', { midi: 'examples/projects/tune.mid' }],
    'drums.toml': ['drums with drums.mid, samples handed over as bytes', { midi: 'examples/projects/drums.mid' }],
    'fanin84.toml': ['fanin84', { seconds: 1 }],
    // Ten seconds: the four looped bars (100 bpm, a ramp to 140, about 8.1 s) and into the
    // second pass, the metronome and the MIDI file's notes read in the song's beats.
    'four_bars.toml': [
        'four_bars with four_bars.mid: [tempo] with a ramp, a looped transport, a metronome',
        { midi: 'examples/projects/four_bars.mid', seconds: 10 },
    ],
};
const REFUSED = {
    'echoes.toml': 'echoes',
    'player.toml': 'file',
    'overdrive-lv2.toml': 'in',
};

describe('example projects', () => {
    test('every example project is compared or refused', () => {
        const all = readdirSync(join(repo, 'examples/projects')).filter((f) => f.endsWith('.toml'));
        assert.deepEqual(all.sort(), [...Object.keys(COMPARED), ...Object.keys(REFUSED)].sort());
    });

    for (const [file, [name, options]] of Object.entries(COMPARED)) {
        test(name, () => same(`examples/projects/${file}`, options));
    }

    for (const [file, node] of Object.entries(REFUSED)) {
        const project = `examples/projects/${file}`;
        test(`${project} is refused naming node \`${node}\``, () => {
            const r = renderWasm(project, { seconds: 0.1 });
            assert.equal(r.rc, -6, `expected -6, got ${r.rc}: ${r.error}`);
            assert.match(r.error, new RegExp(`node \`${node}\` is of type`));
            assert.match(r.error, /not supported in the browser/);
            assert.match(r.error, new RegExp(`--> ${project.replace(/\./g, '\\.')}:\\d+:\\d+`));
        });
    }
});

describe('one project per node type', () => {
    const s = scratch();
    after(s.done);
    const head = 'sample_rate = 48000\nblock_size = 128\n';
    const out = '[nodes.out]\ntype = "output"\n';
    const types = {
        sine: `edges = ["a -> out"]\n[nodes.a]\ntype = "sine"\nfreq = 443.0\namp = 0.5\n`,
        noise: `edges = ["a -> out"]\n[nodes.a]\ntype = "noise"\namp = 0.3\n`,
        gain: `edges = ["a -> g -> out"]\n[nodes.a]\ntype = "sine"\nfreq = 200.0\n[nodes.g]\ntype = "gain"\ngain = 0.7\n`,
        mix: `edges = ["a -> m", "b -> m", "m -> out"]\n[nodes.a]\ntype = "sine"\nfreq = 300.0\n[nodes.b]\ntype = "noise"\namp = 0.1\n[nodes.m]\ntype = "mix"\ngain_db = -4.5\n`,
        biquad: `edges = ["a -> f -> out"]\n[nodes.a]\ntype = "noise"\n[nodes.f]\ntype = "biquad"\nmode = "bandpass"\nfreq = 1200.0\nq = 3.0\n`,
        karplus: `edges = ["a -> out"]\n[nodes.a]\ntype = "karplus"\nnotes = [45, 52, 57, 64]\ninterval = 0.3\nlength = 0.25\n`,
        strings: `edges = ["a -> out"]\n[nodes.a]\ntype = "strings"\nvoices = 6\nlength = 0.8\n`,
        synth: `edges = ["a -> out"]\n[nodes.a]\ntype = "synth"\nwave = "saw"\ncutoff = 1800.0\n`,
        spectral_compressor: `edges = ["a -> c -> out"]\n[nodes.a]\ntype = "karplus"\ninterval = 0.25\nlength = 0.2\n[nodes.c]\ntype = "spectral_compressor"\nthreshold_db = -30.0\nratio = 4.0\n`,
        sampler: `edges = ["a -> out"]\n[nodes.a]\ntype = "sampler"\nsample = "../../examples/samples/snare.wav"\nroot = 60\n`,
    };
    const midi = new Set(['synth', 'sampler', 'strings']);
    for (const [type, body] of Object.entries(types)) {
        test(type, () => {
            const file = join(s.dir, `${type}.toml`);
            writeFileSync(file, head + body + out);
            const options = midi.has(type) ? { midi: 'examples/projects/tune.mid' } : { seconds: SECONDS };
            same(s.rel(file), options);
        });
    }
});

/** A MIDI file (format 0, 480 ticks a beat, no tempo: 120 bpm) playing `keys` one after
 * another, each for `ticks`, at velocity 100. */
function midiFile(keys, ticks) {
    const vlq = (n) => {
        const b = [n & 0x7f];
        while ((n >>= 7)) b.unshift((n & 0x7f) | 0x80);
        return b;
    };
    const track = keys.flatMap((k) => [0, 0x90, k, 100, ...vlq(ticks), 0x80, k, 0]);
    track.push(0, 0xff, 0x2f, 0);
    const u32 = (n) => [n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
    return Uint8Array.from([
        ...Buffer.from('MThd'), ...u32(6), 0, 0, 0, 1, 480 >> 8, 480 & 0xff,
        ...Buffer.from('MTrk'), ...u32(track.length), ...track,
    ]);
}

// What docs/ARCHITECTURE.md once checked by hand (the tables and transforms hashed natively
// and in Node), through renders instead: a synth reads table j of its waveform for phase
// increments in (0.5 * 2^-(j+1)/2, 0.5 * 2^-j/2] (the last, j = 20, also below), so every MIDI
// note at 32 kHz (12.5 kHz is an increment of 0.39: table 0; 8.2 Hz: table 20) plays every one
// of the 21 tables of each waveform, a half octave (six notes) each; and spectral_compressor
// runs `RealFft` forward and back at its length, every size it takes (256 to 8192).
describe('every synth wavetable and every FFT size', () => {
    const s = scratch();
    after(s.done);

    test('each waveform playing all 128 MIDI notes at 32 kHz', () => {
        const midi = join(s.dir, 'all-notes.mid');
        writeFileSync(midi, midiFile([...Array(128).keys()], 60)); // an eighth note each: 8 s
        const synth = (wave) =>
            `[nodes.${wave}]\ntype = "synth"\nwave = "${wave}"\nvoices = 2\nrelease = 0.01\n` +
            `cutoff = 12000.0\namp = 0.3\n`;
        const file = join(s.dir, 'wavetables.toml');
        writeFileSync(
            file,
            'sample_rate = 32000\nblock_size = 128\n' +
                'edges = ["sine -> m", "saw -> m", "square -> m", "m -> out"]\n' +
                synth('sine') + synth('saw') + synth('square') +
                '[nodes.m]\ntype = "mix"\n[nodes.out]\ntype = "output"\n',
        );
        const { wasm, r } = same(s.rel(file), { midi: s.rel(midi), seconds: 8.1 });
        assert.equal(r.frames[0], Math.ceil(8.1 * 32000));
        // Every note sounded: its eighth note (2000 frames) is not silent.
        const silent = [...Array(128).keys()].filter(
            (k) => !wasm.out[0].subarray(2000 * k, 2000 * (k + 1)).some((x) => x !== 0),
        );
        assert.deepEqual(silent, [], 'notes that did not sound');
    });

    test('spectral_compressor at every fft_size from 256 to 8192', () => {
        const sizes = [256, 512, 1024, 2048, 4096, 8192];
        const file = join(s.dir, 'fft-sizes.toml');
        writeFileSync(
            file,
            'sample_rate = 48000\nblock_size = 128\n' +
                `edges = [${sizes.map((n) => `"noise -> c${n}", "c${n} -> m"`).join(', ')}, "m -> out"]\n` +
                '[nodes.noise]\ntype = "noise"\namp = 0.5\n' +
                sizes
                    .map((n) => `[nodes.c${n}]\ntype = "spectral_compressor"\nfft_size = ${n}\nthreshold_db = -30.0\nratio = 4.0\n`)
                    .join('') +
                '[nodes.m]\ntype = "mix"\ngain_db = -12.0\n[nodes.out]\ntype = "output"\n',
        );
        same(s.rel(file), { seconds: 1 });
    });
});

describe('errors', () => {
    const s = scratch();
    after(s.done);
    const cases = {
        'syntax error': 'sample_rate = 48000\nedges = ["a -> out"\n[nodes.a]\ntype = "sine"\n',
        'parameter out of range': 'edges = ["a -> out"]\n[nodes.a]\ntype = "sine"\nfreq = -5.0\n[nodes.out]\ntype = "output"\n',
        'unknown node in an edge': 'edges = ["a -> b"]\n[nodes.a]\ntype = "sine"\n[nodes.out]\ntype = "output"\n',
    };
    for (const [name, text] of Object.entries(cases)) {
        test(`${name}: the CLI's message, word for word`, () => {
            const file = join(s.dir, `${name.replace(/ /g, '-')}.toml`);
            writeFileSync(file, text);
            const native = nativeError(s.rel(file));
            assert.equal(native.status, 2, `the CLI should refuse it: ${native.stderr}`);
            const r = renderWasm(s.rel(file), { seconds: 0.1 });
            assert.equal(r.rc, -2);
            assert.equal(`error: ${r.error}\n`, native.stderr);
        });
    }
});

test('unknown node type: the CLI\'s message; the list of valid types adds `lv2`', () => {
    // The browser refuses `lv2` by name (-6), so it knows the type; a default CLI build (without
    // the `lv2` feature) does not. Every other word, and the order of the types (an LV2 build
    // registers `lv2` after `echoes`, before `vst3`), is the CLI's.
    const s = scratch();
    try {
        const file = join(s.dir, 'unknown-type.toml');
        writeFileSync(file, 'edges = ["a -> out"]\n[nodes.a]\ntype = "sinus"\n[nodes.out]\ntype = "output"\n');
        const native = nativeError(s.rel(file));
        assert.equal(native.status, 2, native.stderr);
        const r = renderWasm(s.rel(file), { seconds: 0.1 });
        assert.equal(r.rc, -2);
        const expected = native.stderr.replace(/(valid types are .*`echoes`)/, '$1, `lv2`');
        assert.notEqual(expected, native.stderr, 'the CLI lists the valid types');
        assert.equal(`error: ${r.error}\n`, expected);
    } finally {
        s.done();
    }
});

describe('events', () => {
    const s = scratch();
    after(s.done);
    const N = 1000; // inside the 8th block of 128 frames, not on a block boundary
    const text =
        'sample_rate = 48000\nblock_size = 128\nedges = ["a -> g -> out", "k -> g"]\n' +
        '[nodes.a]\ntype = "sine"\nfreq = 330.0\n[nodes.k]\ntype = "synth"\n' +
        '[nodes.g]\ntype = "gain"\ngain = 1.0\n[nodes.out]\ntype = "output"\n';

    test('a step, a ramp and a note at frame N land at frame N, as a native replay of them', () => {
        const file = join(s.dir, 'events.toml');
        writeFileSync(file, text);
        const project = s.rel(file);
        const events = (table) => {
            const gain = table.params.find((p) => p.node === 'g' && p.name === 'gain').id;
            const k = table.instruments.find((i) => i.node === 'k').id;
            return [
                [2, gain, N, 0.25], // step
                [3, gain, 3 * N, 2.0, 0.01], // ramp over 0.01 s = 480 frames
                [4, k, 2 * N, 69, 0.75, 0], // note on, velocity 0.75
                [5, k, 4 * N, 69, 0, 0], // note off
            ];
        };
        const plain = renderWasm(project, { seconds: 0.2 }).out;
        const moved = renderWasm(project, { seconds: 0.2, events }).out;
        const first = moved[0].findIndex((x, i) => x !== plain[0][i]);
        assert.equal(first, N, `the step shows from frame ${first}, not ${N}`);
        assert.equal(moved[0][N], plain[0][N] * 0.25);
        const native = renderNative(project, {
            seconds: 0.2,
            replay: [
                { frame: N, node: 'g', param: 'gain', change: 'step', value: 0.25 },
                { frame: 2 * N, node: 'k', change: 'note_on', channel: 0, note: 69.0, velocity: 0.75 },
                { frame: 3 * N, node: 'g', param: 'gain', change: 'linear', to: 2.0, frames: 480 },
                { frame: 4 * N, node: 'k', change: 'note_off', channel: 0, note: 69.0 },
            ],
        });
        const r = compare(moved, native);
        console.log(`events: ${r.identical}/${r.total} bit-identical, largest difference ${r.maxDiff}`);
        assert.deepEqual(r.frames, [native[0].length, native[0].length]);
        const differs = firstDifference(moved, native);
        assert.equal(differs, null, `${r.total - r.identical} of ${r.total} samples differ; the first: ${differs}`);
    });
});
