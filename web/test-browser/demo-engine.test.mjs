// Browser tests of the engine's demo pages: web/demo/engine.html (the synth on the keyboard) and
// the wasm transport of the Karplus-Strong stress page, in headless Chromium (Debian's package)
// driven by playwright-core, on the real wasm engine.
//
//   cd web && npm run build && node --test test-browser/demo-engine.test.mjs
//
// Needs /usr/bin/chromium (or CHROMIUM=...) and built packages: the server maps /engine/ to
// packages/engine/dist/ (or ENGINE_DIST, to run the same tests against another build).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ENGINE_ROOT as DEFAULT_ENGINE_ROOT, RINGBUF_ROOT, startServer } from "../demo/serve.mjs";
import { stringNote } from "../demo/projects.js";
import { EXECUTABLE, launchChromium } from "./chromium.mjs";

const ENGINE_ROOT = process.env.ENGINE_DIST ?? DEFAULT_ENGINE_ROOT;
const hz = (note) => 440 * Math.pow(2, (note - 69) / 12);

let server;
let browser;
let closeBrowser;

before(async () => {
  assert.ok(existsSync(EXECUTABLE), `no Chromium at ${EXECUTABLE} (set CHROMIUM=...)`);
  for (const [root, what] of [
    [RINGBUF_ROOT, "@downbeat/ringbuf"],
    [ENGINE_ROOT, "@downbeat/engine"],
  ]) {
    assert.ok(existsSync(join(root, "index.js")), `${root}/index.js is missing: build ${what} first (cd web && npm run build)`);
  }
  assert.ok(existsSync(join(ENGINE_ROOT, "downbeat_engine.wasm")), `${ENGINE_ROOT}/downbeat_engine.wasm is missing: cd web && npm run build`);
  server = await startServer({ port: 0, engineRoot: ENGINE_ROOT });
  ({ browser, close: closeBrowser } = await launchChromium());
});

after(async () => {
  await closeBrowser?.();
  await server?.close();
});

/**
 * Opens `path` on the server in a new page; page errors fail the test that made it. Every
 * `postMessage` of the page's main thread (ports and Workers) is counted in `window.__posted`.
 */
async function open(path) {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.addInitScript(() => {
    window.__posted = 0;
    for (const proto of [MessagePort.prototype, Worker.prototype]) {
      const post = proto.postMessage;
      proto.postMessage = function (...a) {
        window.__posted++;
        return post.apply(this, a);
      };
    }
  });
  await page.goto(new URL(path, server.url).href);
  return { page, errors };
}

/**
 * Starts counting messages both ways between the page and the running engine's worklet (the
 * engine of `window[api].engine()`): what the main thread posts (any port or Worker) and what
 * arrives on the engine node's port. The function returned gives both counts since the call.
 */
async function watchMessages(page, api) {
  await page.evaluate((name) => {
    const node = window[name].engine().node;
    window.__fromWorklet = 0;
    node.port.addEventListener("message", () => window.__fromWorklet++);
    node.port.start();
    window.__postedAtStart = window.__posted;
  }, api);
  return () => page.evaluate(() => ({ posted: window.__posted - window.__postedAtStart, fromWorklet: window.__fromWorklet }));
}

/** Waits for `fn` (run in the page) to return a truthy value; the message says what did not happen. */
async function until(page, fn, arg, what, timeout = 10000) {
  try {
    return await (await page.waitForFunction(fn, arg, { timeout })).jsonValue();
  } catch (e) {
    throw new Error(`${what}: ${e.message.split("\n")[0]}`);
  }
}

const peakOf = (page) => page.evaluate(() => Math.max(0, ...window.engineDemo.levels().peak));

/** Median of `count` pitch readings of the page's output, a tenth of a second apart. */
async function pitchOf(page, fn, count = 5) {
  const xs = [];
  for (let k = 0; k < count; k++) {
    xs.push(await page.evaluate(fn));
    await page.waitForTimeout(100);
  }
  xs.sort((a, b) => a - b);
  return xs[count >> 1];
}

describe("engine demo page (engine.html)", () => {
  test("starts, one slider per live parameter of the project with the table's range, silent until a key", async () => {
    const { page, errors } = await open("/engine.html?autostart=1");
    try {
      await until(page, () => window.engineDemoStats.running || window.engineDemoStats.error, null, "the engine starts");
      const s = await page.evaluate(() => ({ ...window.engineDemoStats }));
      assert.equal(s.error, null);
      assert.equal(s.sampleRate, 48000);
      assert.equal(s.blockSize, 128);
      const names = s.params.map((p) => `${p.node}.${p.name}`);
      for (const want of ["keys.cutoff", "keys.attack", "keys.amp", "lowpass.freq", "lowpass.q", "mix.gain_db"]) {
        assert.ok(names.includes(want), `${want} among ${names}`);
      }
      assert.ok(!names.includes("keys.voices") && !names.includes("keys.wave"), "only live parameters get sliders");
      const sliders = await page.$$eval("#params input[type=range]", (els) => els.map((e) => `${e.dataset.node}.${e.dataset.param}|${e.title}`));
      assert.deepEqual(
        sliders,
        s.params.map((p) => `${p.node}.${p.name}|${p.node}.${p.name}: ${p.min} to ${p.max}`),
      );
      const cutoff = s.params.find((p) => p.node === "keys" && p.name === "cutoff");
      assert.deepEqual([cutoff.min, cutoff.max, cutoff.initial], [20, 20000, 3000]);
      // Meters keep coming and say silence: no key is down.
      await until(page, () => window.engineDemoStats.rafCount > 10, null, "animation frames run");
      assert.equal(await peakOf(page), 0);
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });

  test("a computer key plays its note at its pitch, read back from the meter ring and the output; releasing it ends the note", async () => {
    const { page, errors } = await open("/engine.html?autostart=1");
    try {
      await until(page, () => window.engineDemoStats.running || window.engineDemoStats.error, null, "the engine starts");
      const messages = await watchMessages(page, "engineDemo");
      await page.locator("body").click({ position: { x: 1, y: 1 } }); // focus for the keyboard
      // Octave 4: A is C4 (60), so H (nine semitones up) is A4, 440 Hz.
      await page.keyboard.down("KeyH");
      await until(page, () => Math.max(0, ...window.engineDemo.levels().peak) > 0.02, null, "the meter ring shows the note");
      const s = await page.evaluate(() => ({ ...window.engineDemoStats }));
      assert.deepEqual(s.held, [69]);
      assert.equal(s.notesOn, 1);
      assert.equal(await page.locator('.key[data-note="69"]').getAttribute("class"), "key white down");
      const f = await pitchOf(page, () => window.engineDemo.pitch());
      assert.ok(Math.abs(f / hz(69) - 1) < 0.01, `pitch ${f} Hz, expected ${hz(69)}`);
      await page.keyboard.up("KeyH");
      await until(page, () => Math.max(0, ...window.engineDemo.levels().peak) < 1e-4, null, "the note is released (release 0.3 s)", 5000);
      assert.equal((await page.evaluate(() => window.engineDemoStats.notesOff)), 1);

      // Z shifts an octave down: H is then A3, 220 Hz.
      await page.keyboard.press("KeyZ");
      await page.keyboard.down("KeyH");
      await until(page, () => Math.max(0, ...window.engineDemo.levels().peak) > 0.02, null, "the lower note sounds");
      const g = await pitchOf(page, () => window.engineDemo.pitch());
      assert.ok(Math.abs(g / hz(57) - 1) < 0.01, `pitch ${g} Hz, expected ${hz(57)}`);
      await page.keyboard.up("KeyH");
      await page.waitForTimeout(200);
      assert.deepEqual(await messages(), { posted: 0, fromWorklet: 0 }, "no postMessage either way once running");
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });

  test("an on-screen key plays while the pointer holds it", async () => {
    const { page, errors } = await open("/engine.html?autostart=1");
    try {
      await until(page, () => window.engineDemoStats.running || window.engineDemoStats.error, null, "the engine starts");
      // E3 = MIDI 52, 164.8 Hz: a white key of the on-screen keyboard (C3 up).
      const key = page.locator('.key[data-note="52"]');
      const box = await key.boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height - 10);
      await page.mouse.down();
      await until(page, () => Math.max(0, ...window.engineDemo.levels().peak) > 0.02, null, "the on-screen key sounds");
      assert.deepEqual(await page.evaluate(() => window.engineDemoStats.held), [52]);
      const f = await pitchOf(page, () => window.engineDemo.pitch());
      assert.ok(Math.abs(f / hz(52) - 1) < 0.01, `pitch ${f} Hz, expected ${hz(52)}`);
      await page.mouse.up();
      await until(page, () => window.engineDemoStats.held.length === 0 && window.engineDemoStats.notesOff === 1, null, "the pointer released the note");
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });

  test("moving a slider changes the parameter, read back from the engine", async () => {
    const { page, errors } = await open("/engine.html?autostart=1");
    let messages = null;
    try {
      await until(page, () => window.engineDemoStats.running || window.engineDemoStats.error, null, "the engine starts");
      for (const [id, slider, expected] of [
        // cutoff: 20..20000 Hz on a log scale, the middle is sqrt(20 * 20000).
        ["param-keys-cutoff", "500", Math.sqrt(20 * 20000)],
        // gain_db: -120..24 dB, linear.
        ["param-mix-gain_db", "250", -120 + 144 / 4],
        ["param-lowpass-q", "1000", 50],
        // release: 0..30 s, cubic: half way is 30 / 8.
        ["param-keys-release", "500", 30 / 8],
      ]) {
        messages ??= await watchMessages(page, "engineDemo");
        const [node, param] = id.slice("param-".length).split("-");
        const before = await page.evaluate(([n, p]) => window.engineDemo.value(n, p), [node, param]);
        assert.ok(Math.abs(before - expected) > 1e-3 * Math.abs(expected), `${node}.${param} starts elsewhere (${before})`);
        await page.locator(`#${id}`).fill(slider);
        const got = await until(
          page,
          ([n, p, want]) => {
            const v = window.engineDemo.value(n, p);
            return Math.abs(v - want) <= 1e-4 * Math.max(1, Math.abs(want)) ? v : false;
          },
          [node, param, expected],
          `${node}.${param} reads back ${expected}`,
        );
        assert.ok(Math.abs(got - expected) <= 1e-4 * Math.max(1, Math.abs(expected)));
      }
      assert.equal(await page.evaluate(() => window.engineDemoStats.paramsSent), 4);
      assert.deepEqual(await messages(), { posted: 0, fromWorklet: 0 }, "no postMessage either way once running");
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });

  test("examples/projects/synth.toml runs too (a synth and a plucked string)", async () => {
    const { page, errors } = await open("/engine.html?project=/projects/synth.toml&autostart=1");
    try {
      await until(page, () => window.engineDemoStats.running || window.engineDemoStats.error, null, "the engine starts");
      const s = await page.evaluate(() => ({ ...window.engineDemoStats }));
      assert.equal(s.error, null);
      const names = s.params.map((p) => `${p.node}.${p.name}`);
      assert.ok(names.includes("keys.cutoff") && names.includes("pluck.decay") && names.includes("lowpass.freq"), String(names));
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });
});

describe("stress page, wasm transport", () => {
  test("N karplus nodes in the engine: silent until strummed, one strum plays its string's pitch, every strum of a strum-all arrives", async () => {
    const strings = 64;
    const { page, errors } = await open(`/?mode=wasm&strings=${strings}&auto=0&strumOnStart=0&autostart=1`);
    try {
      await until(page, () => window.demoStats.running || window.demoStats.error, null, "the engine starts", 30000);
      await until(page, () => window.demoStats.blocks > 20 && window.demoStats.ampFramesReceived > 5, null, "the engine renders and meters come back");
      let s = await page.evaluate(() => ({ ...window.demoStats }));
      assert.equal(s.error, null);
      assert.equal(s.mode, "wasm");
      assert.equal(s.worklets, 1);
      assert.equal(s.peakAmp, 0, "silent before any strum");
      const messages = await watchMessages(page, "demo");

      // String 50 rings at its note (B3 for 50 = 14 semitones above A2).
      assert.equal(await page.evaluate(() => window.demo.strum(50, 0.9)), true);
      await until(page, () => window.demoStats.lastMaxAmp > 0.005, null, "the strum is heard on the meter ring");
      const f = await pitchOf(page, () => window.demo.pitch());
      assert.ok(Math.abs(f / hz(stringNote(50)) - 1) < 0.01, `pitch ${f} Hz, expected string 50's ${hz(stringNote(50))}`);

      // Strum all: every note on goes into the control ring and the engine takes every one in.
      await page.evaluate(() => window.demo.strumAll());
      await until(page, (n) => window.demoStats.strumsReceived === n, strings + 1, "every strum arrives");
      s = await page.evaluate(() => ({ ...window.demoStats }));
      assert.equal(s.strumsSent, strings + 1);
      assert.equal(s.strumsRejected, 0);
      assert.equal(s.strumsDropped, 0);
      assert.ok(s.lastMaxAmp > 0.01);
      const before = s.blocks;
      await page.waitForTimeout(300);
      assert.ok((await page.evaluate(() => window.demoStats.blocks)) > before, "the engine keeps rendering");
      assert.deepEqual(await messages(), { posted: 0, fromWorklet: 0 }, "no postMessage either way once running");
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });

  test("auto-strum of 256 strings flows through the control ring", async () => {
    const { page, errors } = await open("/?mode=wasm&strings=256&strumMs=50&autostart=1");
    try {
      await until(
        page,
        () => window.demoStats.running && window.demoStats.strumsReceived >= 256 * 8 && window.demoStats.fps > 0,
        null,
        "eight strum-alls arrive",
        30000,
      );
      const s = await page.evaluate(() => ({ ...window.demoStats }));
      assert.equal(s.strumsRejected, 0);
      assert.equal(s.strumsDropped, 0);
      assert.ok(s.strumsReceived <= s.strumsSent);
      assert.equal(s.playbackStatsAvailable, true);
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });
});
