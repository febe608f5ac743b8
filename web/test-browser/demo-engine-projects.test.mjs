// The projects the demo pages and the benchmark generate (web/demo/projects.js) are valid
// Downbeat projects: the native CLI loads and renders each, with the node names, notes and
// voices the pages address. Needs the native binary (target/debug/downbeat, or DOWNBEAT=...):
// `cargo build -p downbeat-cli`.
//
//   cd web && node --test test-browser/demo-engine-projects.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  BANK_STRINGS,
  karplusProject,
  sineFreq,
  sineName,
  sineProject,
  stringBank,
  stringName,
  stringNote,
  stringsProject,
  synthProject,
  voiceChannel,
  voiceNote,
  voiceSynth,
} from "../demo/projects.js";

const REPO = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const DOWNBEAT = process.env.DOWNBEAT ?? join(REPO, "target/debug/downbeat");

/** Renders `text` natively for `seconds`; returns the interleaved float samples of the WAV. */
function render(text, seconds, name) {
  assert.ok(existsSync(DOWNBEAT), `no native binary at ${DOWNBEAT}: cargo build -p downbeat-cli (or DOWNBEAT=...)`);
  const dir = mkdtempSync(join(tmpdir(), "downbeat-demo-projects-"));
  try {
    const file = join(dir, name);
    const out = join(dir, "out.wav");
    writeFileSync(file, text);
    const p = spawnSync(DOWNBEAT, ["run", file, "--device", "offline", "--seconds", String(seconds), "--out", out], { encoding: "utf8" });
    assert.equal(p.status, 0, `downbeat run ${name} failed:\n${p.stderr}`);
    return readWav(readFileSync(out));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The samples of a 32-bit float or 16-bit PCM WAV, interleaved, as numbers in -1..1. */
function readWav(buf) {
  assert.equal(buf.toString("ascii", 0, 4), "RIFF");
  let off = 12;
  let format = 0;
  let bits = 0;
  while (off + 8 <= buf.length) {
    const id = buf.toString("ascii", off, off + 4);
    const size = buf.readUInt32LE(off + 4);
    if (id === "fmt ") {
      format = buf.readUInt16LE(off + 8);
      bits = buf.readUInt16LE(off + 22);
    } else if (id === "data") {
      const out = [];
      for (let i = off + 8; i + bits / 8 <= off + 8 + size; i += bits / 8) {
        out.push(bits === 32 && (format === 3 || format === 0xfffe) ? buf.readFloatLE(i) : buf.readInt16LE(i) / 32768);
      }
      return out;
    }
    off += 8 + size + (size & 1);
  }
  throw new Error("no data chunk");
}

const peak = (xs) => xs.reduce((m, x) => Math.max(m, Math.abs(x)), 0);

test("karplusProject: N silent strings named and tuned as the stress page addresses them", () => {
  const text = karplusProject(40, { sampleRate: 44100, blockSize: 128 });
  assert.match(text, /^sample_rate = 44100$/m);
  assert.match(text, /^block_size = 128$/m);
  for (const i of [0, 17, 39]) {
    assert.ok(text.includes(`"${stringName(i)} -> mix"`), `edge of string ${i}`);
    assert.ok(text.includes(`[nodes.${stringName(i)}]\ntype = "karplus"\nchannels = 1\nnotes = [${stringNote(i)}]`), `string ${i}`);
  }
  assert.equal(stringNote(0), 45, "A2, as the JavaScript strings start at 110 Hz");
  assert.equal(stringNote(36), 45, "three octaves, then around again");
  // Silent until strummed: the built-in pattern is an hour away.
  assert.equal(peak(render(text, 0.5, "karplus.toml")), 0);
});

test("stringsProject: N strings in banks of 100, silent until struck, seeded as karplusProject's", () => {
  for (const n of [40, 100, 250]) {
    const text = stringsProject(n, { sampleRate: 44100, blockSize: 128 });
    const voices = [...text.matchAll(/^voices = (\d+)$/gm)].map((m) => Number(m[1]));
    assert.equal(voices.reduce((a, b) => a + b, 0), n);
    assert.ok(voices.every((v) => v <= BANK_STRINGS));
    assert.equal(voices.length, Math.ceil(n / BANK_STRINGS));
    for (const i of [0, n - 1]) {
      assert.ok(text.includes(`"${stringBank(i)} -> mix"`), `edge of string ${i}'s bank`);
    }
    const seeds = [...text.matchAll(/^seed = (\d+)$/gm)].map((m) => Number(m[1]));
    assert.deepEqual(seeds, voices.map((_, b) => b * BANK_STRINGS + 1));
    assert.equal(peak(render(text, 0.2, "strings.toml")), 0, "silent until struck");
  }
  assert.equal(stringBank(99), stringBank(0));
  assert.notEqual(stringBank(100), stringBank(99));
});

test("sineProject: N sines at sineFreq(i), summed to at most half scale", () => {
  const n = 24;
  const text = sineProject(n);
  assert.ok(text.includes(`[nodes.${sineName(23)}]`));
  assert.ok(text.includes(`freq = ${sineFreq(5, n).toFixed(4)}`));
  const p = peak(render(text, 0.5, "sines.toml"));
  assert.ok(p > 0.05 && p <= 0.5 + 1e-6, `peak ${p}`);
});

test("synthProject: voices over as many synth nodes as it takes, each voice a distinct note", () => {
  for (const voices of [8, 1500]) {
    const text = synthProject(voices);
    const nodes = [...text.matchAll(/^voices = (\d+)$/gm)].map((m) => Number(m[1]));
    assert.equal(nodes.reduce((a, b) => a + b, 0), voices);
    assert.ok(nodes.every((v) => v <= 1024));
    assert.equal(peak(render(text, 0.1, "synth.toml")), 0, "silent until notes are held");
  }
  const seen = new Set();
  for (let k = 0; k < 1500; k++) {
    const key = `${voiceSynth(k)}/${voiceChannel(k)}/${voiceNote(k)}`;
    assert.ok(!seen.has(key), `voice ${k} repeats ${key}`);
    assert.ok(voiceNote(k) >= 24 && voiceNote(k) <= 107 && voiceChannel(k) <= 15);
    seen.add(key);
  }
});

test("the demo's keys.toml is a valid project", () => {
  const text = readFileSync(join(REPO, "web/demo/keys.toml"), "utf8");
  assert.equal(peak(render(text, 0.2, "keys.toml")), 0, "silent until a key is pressed");
});
