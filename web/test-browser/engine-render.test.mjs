// `npm run render` against the native CLI: every example project the browser can run and one
// project per node type, rendered in headless Chromium through an OfflineAudioContext and the
// wasm engine, must have the native render's length and channels and equal it bit for bit,
// every sample of every channel (docs/ARCHITECTURE.md, "The same arithmetic on every target").
// A project with an error must fail with the CLI's message, word for word; projects with nodes
// that need the OS are refused.
//
//   cd web && node --test test-browser/engine-render.test.mjs
//
// Needs /usr/bin/chromium (or CHROMIUM=...), cargo (builds target/debug/downbeat when missing)
// and python3 (examples/samples/make.py makes the drum samples when missing).
import { before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { decodeWav } from "../packages/engine/dist/wav.js";

const WEB = resolve(fileURLToPath(new URL("..", import.meta.url)));
const ROOT = resolve(WEB, "..");
const CLI = join(ROOT, "target/debug/downbeat");
const EX = "../examples/projects";
const NODES = "test-browser/engine-projects";
let tmp;

before(() => {
  if (!existsSync(CLI)) {
    execFileSync("cargo", ["build", "-p", "downbeat-cli", "--bin", "downbeat"], { cwd: ROOT, stdio: "inherit" });
  }
  if (!existsSync(join(ROOT, "examples/samples/kick.wav"))) {
    execFileSync("python3", [join(ROOT, "examples/samples/make.py")], { stdio: "inherit" });
  }
  tmp = mkdtempSync(join(tmpdir(), "downbeat-engine-render-"));
  process.on("exit", () => rmSync(tmp, { recursive: true, force: true }));
});

/** A sample's bits as eight hex digits. */
const hex = (bits) => bits.toString(16).padStart(8, "0");

/** `npm run render -- args` from web/ (through npm, as a user runs it). */
function render(args) {
  return spawnSync("npm", ["run", "--silent", "render", "--", ...args], { cwd: WEB, encoding: "utf8" });
}

/** `downbeat run PROJECT --device offline ...` from web/, so both see the same relative paths. */
function native(args) {
  return spawnSync(CLI, ["run", args[0], "--device", "offline", ...args.slice(1)], { cwd: WEB, encoding: "utf8" });
}

const cases = [
  // [name, project, extra arguments]
  ["hello", `${EX}/hello.toml`, ["--seconds", "3"]],
  ["synth + tune.mid (length from the MIDI file)", `${EX}/synth.toml`, ["--midi", `${EX}/tune.mid`]],
  ["drums + drums.mid (samples handed over by path)", `${EX}/drums.toml`, ["--midi", `${EX}/drums.mid`]],
  ["fanin84", `${EX}/fanin84.toml`, ["--seconds", "2"]],
  ...["sine", "noise", "gain", "mix", "biquad", "karplus", "spectral_compressor"].map((n) => [
    `node type ${n}`,
    `${NODES}/${n}.toml`,
    ["--seconds", "1.5"],
  ]),
  ["node type synth (+ tune.mid, cut at 2.5 s)", `${NODES}/synth.toml`, ["--midi", `${EX}/tune.mid`, "--seconds", "2.5"]],
  ["node type sampler (+ drums.mid)", `${NODES}/sampler.toml`, ["--midi", `${EX}/drums.mid`]],
];

describe("npm run render equals downbeat run --device offline", () => {
  for (const [name, project, extra] of cases) {
    test(name, (t) => {
      const key = name.replace(/\W+/g, "-");
      const nativeOut = join(tmp, `${key}-native.wav`);
      const webOut = join(tmp, `${key}-web.wav`);
      const n = native([project, ...extra, "--out", nativeOut]);
      assert.equal(n.status, 0, `native run failed: ${n.stderr}`);
      const w = render([project, ...extra, "--out", webOut]);
      assert.equal(w.status, 0, `npm run render failed: ${w.stderr}`);
      const a = decodeWav(readFileSync(nativeOut));
      const b = decodeWav(readFileSync(webOut));
      assert.equal(b.sampleRate, a.sampleRate);
      assert.equal(b.channels.length, a.channels.length, "channels");
      assert.equal(b.frames, a.frames, "length in frames");
      assert.ok(a.frames > 0);
      let max = 0;
      let same = 0;
      let loud = 0;
      let first = null;
      for (let c = 0; c < a.channels.length; c++) {
        const x = a.channels[c];
        const y = b.channels[c];
        // Bits, not values: one ulp, or -0 against +0, is a difference.
        const xb = new Uint32Array(x.buffer, x.byteOffset, x.length);
        const yb = new Uint32Array(y.buffer, y.byteOffset, y.length);
        for (let i = 0; i < a.frames; i++) {
          if (xb[i] === yb[i]) {
            same++;
          } else {
            max = Math.max(max, Math.abs(x[i] - y[i]));
            first ??= `channel ${c}, frame ${i}: web ${y[i]} (0x${hex(yb[i])}) against native ${x[i]} (0x${hex(xb[i])})`;
          }
          if (Math.abs(x[i]) > 1e-3) loud++;
        }
      }
      const total = a.frames * a.channels.length;
      t.diagnostic(`${a.frames} frames x ${a.channels.length}: ${same} of ${total} samples bit-identical, max difference ${max}`);
      assert.ok(loud > total / 100, "the render is not (nearly) silent: the comparison means something");
      assert.equal(first, null, `${total - same} of ${total} samples differ; the first: ${first}`);
    });
  }
});

describe("projects the browser cannot run", () => {
  test("a project with an error fails with the CLI's message, word for word", () => {
    const project = `${NODES}/bad-value.toml`;
    const n = native([project, "--seconds", "1", "--out", join(tmp, "bad-native.wav")]);
    const w = render([project, "--seconds", "1", "--out", join(tmp, "bad-web.wav")]);
    assert.notEqual(n.status, 0);
    assert.match(n.stderr, /bad value for `freq` of node `a`/);
    assert.equal(w.status, 1);
    assert.equal(w.stderr.trimEnd(), n.stderr.trimEnd());
    assert.equal(existsSync(join(tmp, "bad-web.wav")), false, "no file for a failed render");
  });

  for (const [project, node, type] of [
    [`${EX}/echoes.toml`, "echoes", "echoes"],
    [`${EX}/player.toml`, "file", "player"],
    [`${EX}/overdrive-lv2.toml`, "in", "input"],
    [`${NODES}/lv2.toml`, "drive", "lv2"],
  ]) {
    test(`${project} (a ${type} node) is refused, naming the node and saying why`, () => {
      const w = render([project, "--seconds", "1", "--out", join(tmp, `${type}.wav`)]);
      assert.equal(w.status, 1, w.stderr);
      assert.match(w.stderr, new RegExp(`^error: node \`${node}\` is of type "${type}", .*not supported in the browser`));
      assert.match(w.stderr, new RegExp(`--> ${project}:\\d+:\\d+`));
    });
  }

  test("bad arguments get the usage line and status 2", () => {
    const w = render([`${EX}/hello.toml`, "--seconds", "-1", "--out", join(tmp, "x.wav")]);
    assert.equal(w.status, 2);
    assert.match(w.stderr, /--seconds must be a number above 0, got -1\nusage: npm run render/);
  });
});
