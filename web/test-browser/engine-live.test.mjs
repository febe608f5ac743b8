// @downbeat/engine in a live AudioContext in headless Chromium:
// * a recording (worklet -> ring -> Worker -> WAV in OPFS) equals, frame for frame, an offline
//   render of the same project over the same frames;
// * a parameter step sent through the control ring for frame N lands at frame N (checked in the
//   recording: before N it equals the offline render, from N on it is silence);
// * the worklet thread collects no garbage during 10 s of play with control traffic (Chrome's
//   trace: MinorGC/MajorGC events on the "AudioWorklet" thread), while a processor that makes
//   ~1 KiB of garbage per quantum is seen collecting;
// * a Worker given engine.controller() sends events through the ring itself;
// * create() rejects a bad project with the CLI's message, and a context at the wrong rate.
//
//   cd web && node --test test-browser/engine-live.test.mjs
//
// Needs /usr/bin/chromium (or CHROMIUM=...), a built package with its wasm (npm run render
// builds both), and target/debug/downbeat for the error message (cargo builds it when missing).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "../demo/serve.mjs";
import { ensureBuilt } from "../scripts/render.mjs";
import { EXECUTABLE, launchChromium } from "./chromium.mjs";

const WEB = resolve(fileURLToPath(new URL("..", import.meta.url)));
const ROOT = resolve(WEB, "..");
const CLI = join(ROOT, "target/debug/downbeat");
const read = (p) => readFileSync(join(WEB, p), "utf8");

let server;
let browser;
let closeBrowser;

before(async () => {
  assert.ok(existsSync(EXECUTABLE), `no Chromium at ${EXECUTABLE} (set CHROMIUM=...)`);
  ensureBuilt();
  server = await startServer({ port: 0, demoRoot: WEB });
  ({ browser, close: closeBrowser } = await launchChromium());
});

after(async () => {
  await closeBrowser?.();
  await server?.close();
});

async function open() {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(new URL("test-browser/engine-page.html", server.url).href);
  assert.equal(await page.evaluate(() => self.crossOriginIsolated), true);
  return { page, errors };
}

/** Runs `fn(engineModule, arg)` in the page; the module is /packages/engine/dist/index.js. */
function inPage(page, fn, arg) {
  return page.evaluate(
    async ({ src, arg }) => {
      const m = await import("/packages/engine/dist/index.js");
      // eslint-disable-next-line no-new-func
      return new Function("m", "arg", `return (${src})(m, arg);`)(m, arg);
    },
    { src: fn.toString(), arg },
  );
}

describe("live AudioContext", () => {
  test("a recording equals the offline render of the same frames, every one", async () => {
    const { page, errors } = await open();
    try {
      const r = await inPage(
        page,
        async (m, { toml }) => {
          const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
          const context = new AudioContext({ sampleRate: 48000 });
          const engine = await m.DownbeatEngine.create(context, toml, { name: "hello.toml" });
          engine.node.connect(context.destination);
          await context.resume();
          while (engine.meters().position < 4800) await sleep(10);
          const recording = engine.record({ fileName: "engine-live-test.wav" });
          await sleep(2500);
          const { file, frames, startFrame } = await recording.stop();
          const wav = m.decodeWav(new Uint8Array(await file.arrayBuffer()));
          await context.close();
          const offline = await m.renderOffline(toml, { seconds: (startFrame + frames) / 48000 });
          let mismatches = 0;
          let first = -1;
          for (let c = 0; c < 2; c++) {
            for (let i = 0; i < frames; i++) {
              if (!Object.is(wav.channels[c][i], offline.channels[c][startFrame + i])) {
                mismatches++;
                if (first < 0) first = i;
              }
            }
          }
          let loud = 0;
          for (const x of wav.channels[0]) if (Math.abs(x) > 1e-3) loud++;
          return { frames, startFrame, wavFrames: wav.frames, rate: wav.sampleRate, mismatches, first, loud, offlineFrames: offline.frames };
        },
        { toml: read("../examples/projects/hello.toml") },
      );
      assert.ok(r.startFrame >= 4800, `started at ${r.startFrame}`);
      assert.ok(r.frames > 48000 * 2, `recorded ${r.frames} frames in 2.5 s`);
      assert.equal(r.wavFrames, r.frames, "the file holds every frame recorded");
      assert.equal(r.rate, 48000);
      assert.ok(r.offlineFrames >= r.startFrame + r.frames);
      assert.ok(r.loud > r.frames / 10, "not silence");
      assert.equal(r.mismatches, 0, `first mismatch at recorded frame ${r.first}`);
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });

  test("a parameter step sent through the ring for frame N lands at frame N", async () => {
    const { page, errors } = await open();
    try {
      const r = await inPage(
        page,
        async (m, { toml }) => {
          const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
          const context = new AudioContext({ sampleRate: 48000 });
          const engine = await m.DownbeatEngine.create(context, toml, { name: "sine.toml" });
          engine.node.connect(context.destination);
          await context.resume();
          while (engine.meters().position < 2560) await sleep(10);
          const now = engine.meters().position;
          // Well ahead of the worklet, and not on a block edge.
          const start = now + 24000;
          const n = start + 12345;
          const recording = engine.record({ frame: start, fileName: "engine-step-test.wav" });
          engine.setParam("g", "gain", 0, { frame: n, smooth: false });
          const stop = n + 6000;
          const { file, frames, startFrame } = await recording.stop({ frame: stop });
          const wav = m.decodeWav(new Uint8Array(await file.arrayBuffer()));
          const value = engine.value("g", "gain");
          await context.close();
          const offline = await m.renderOffline(toml, { seconds: stop / 48000 });
          let before = 0;
          let after = 0;
          for (let c = 0; c < 2; c++) {
            for (let i = 0; i < frames; i++) {
              const f = startFrame + i;
              if (f < n && !Object.is(wav.channels[c][i], offline.channels[c][f])) before++;
              if (f >= n && wav.channels[c][i] !== 0) after++;
            }
          }
          return { n, start, startFrame, frames, before, after, value, lastBefore: offline.channels[0][n - 1] };
        },
        { toml: read("test-browser/engine-projects/gain.toml") },
      );
      assert.equal(r.startFrame, r.start);
      assert.equal(r.frames, r.n + 6000 - r.start);
      assert.notEqual(r.lastBefore, 0, "frame N - 1 is not silent anyway");
      assert.equal(r.before, 0, "frames before N equal the offline render");
      assert.equal(r.after, 0, "frames from N on are silent");
      assert.equal(r.value, 0, "the meters ring reports the new value");
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });

  test("a Worker holding engine.controller() sends events through the ring", async () => {
    const { page, errors } = await open();
    try {
      const r = await inPage(
        page,
        async (m, { toml }) => {
          const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
          const context = new AudioContext({ sampleRate: 48000 });
          const engine = await m.DownbeatEngine.create(context, toml, { name: "gain.toml" });
          engine.node.connect(context.destination);
          await context.resume();
          while (engine.meters().position < 1000) await sleep(10);
          const sentAt = engine.meters().position;
          const frame = sentAt + 24000;
          const worker = new Worker("/test-browser/engine-worker.js", { type: "module" });
          const reply = await new Promise((ok) => {
            worker.onmessage = ({ data }) => ok(data);
            worker.postMessage({ init: engine.controller(), value: 0.25, frame });
          });
          // Blocks after the Worker sent, still before the frame: the old value.
          while (engine.meters().position < sentAt + 4800) await sleep(10);
          const before = engine.value("g", "gain");
          while (engine.meters().position <= frame) await sleep(10);
          const after = engine.value("g", "gain");
          worker.terminate();
          await context.close();
          return { reply, before, after };
        },
        { toml: read("test-browser/engine-projects/gain.toml") },
      );
      assert.deepEqual(r.reply, { sent: true, unknown: "UnknownName" });
      assert.equal(r.before, Math.fround(1.7), "not yet: the step is for a later frame");
      assert.equal(r.after, 0.25);
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });
});

/** GC events Chrome's trace shows on AudioWorklet threads while `run` runs in the page. */
async function workletGcs(page, run) {
  const cdp = await browser.newCDPSession(page);
  const events = [];
  cdp.on("Tracing.dataCollected", (d) => events.push(...d.value));
  const complete = new Promise((ok) => cdp.once("Tracing.tracingComplete", ok));
  await cdp.send("Tracing.start", {
    traceConfig: { includedCategories: ["v8", "devtools.timeline", "disabled-by-default-v8.gc", "__metadata"] },
    transferMode: "ReportEvents",
  });
  const result = await run();
  await cdp.send("Tracing.end");
  await complete;
  await cdp.detach();
  const threads = new Map();
  for (const e of events) if (e.ph === "M" && e.name === "thread_name") threads.set(`${e.pid}:${e.tid}`, e.args.name);
  const worklet = (e) => /AudioWorklet/.test(threads.get(`${e.pid}:${e.tid}`) ?? "");
  const sawWorklet = events.some((e) => worklet(e) && e.name === "FunctionCall");
  const gcs = events.filter((e) => worklet(e) && (e.name === "MinorGC" || e.name === "MajorGC")).length;
  return { gcs, sawWorklet, result };
}

describe("no garbage in the worklet", () => {
  test("10 s of play with control traffic: no GC on the AudioWorklet thread", async () => {
    const { page, errors } = await open();
    try {
      await inPage(
        page,
        async (m, { toml }) => {
          const context = new AudioContext({ sampleRate: 48000 });
          window.engine = await m.DownbeatEngine.create(context, toml, { name: "hello.toml" });
          window.engine.node.connect(context.destination);
          await context.resume();
          // Let the JIT settle before the trace starts.
          await new Promise((ok) => setTimeout(ok, 1500));
        },
        { toml: read("../examples/projects/hello.toml") },
      );
      const { gcs, sawWorklet, result } = await workletGcs(page, () =>
        page.evaluate(async () => {
          const engine = window.engine;
          const start = engine.meters().position;
          let sent = 0;
          const t0 = performance.now();
          while (performance.now() - t0 < 10_000) {
            engine.setParam("tone", "freq", 110 + (sent % 50));
            engine.noteOn(57 + (sent % 12), 0.75);
            if (sent % 4 === 0) engine.ramp("lowpass", "freq", 400 + (sent % 7) * 100, 0.05);
            sent++;
            await new Promise((ok) => setTimeout(ok, 5));
            engine.meters();
          }
          const m = engine.meters();
          return { frames: m.position - start, sent, errors: m.eventErrors, dropped: m.dropped, value: engine.value("tone", "freq") };
        }),
      );
      assert.ok(sawWorklet, "the trace shows the AudioWorklet thread at work");
      assert.ok(result.frames >= 48000 * 9, `the worklet rendered ${result.frames} frames in 10 s`);
      assert.ok(result.sent > 500, `${result.sent} rounds of control traffic`);
      assert.equal(result.errors, 0);
      assert.equal(result.dropped, 0);
      assert.ok(result.value >= 110 && result.value < 160);
      assert.equal(gcs, 0, `${gcs} garbage collections on the AudioWorklet thread`);
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });

  test("the detector works: a processor making ~1 KiB of garbage per quantum is seen collecting", async () => {
    const { page } = await open();
    try {
      await page.evaluate(async () => {
        const context = new AudioContext({ sampleRate: 48000 });
        await context.audioWorklet.addModule("/test-browser/engine-alloc-processor.js");
        new AudioWorkletNode(context, "downbeat-test-allocating").connect(context.destination);
        await context.resume();
        window.allocContext = context;
      });
      const { gcs, sawWorklet } = await workletGcs(page, () => page.waitForTimeout(10_000));
      assert.ok(sawWorklet);
      assert.ok(gcs > 0, "the allocating processor must show GC events on the AudioWorklet thread");
    } finally {
      await page.close();
    }
  });
});

describe("errors", () => {
  test("create() rejects a bad project with the CLI's message; a context at another rate is refused", async () => {
    if (!existsSync(CLI)) execFileSync("cargo", ["build", "-p", "downbeat-cli", "--bin", "downbeat"], { cwd: ROOT, stdio: "inherit" });
    const project = "test-browser/engine-projects/bad-value.toml";
    const cli = spawnSync(CLI, ["run", project, "--device", "offline", "--seconds", "1"], { cwd: WEB, encoding: "utf8" });
    assert.notEqual(cli.status, 0);
    const { page } = await open();
    try {
      const r = await inPage(
        page,
        async (m, { bad, good, name }) => {
          const context = new AudioContext({ sampleRate: 44100 });
          const out = {};
          try {
            await m.DownbeatEngine.create(context, bad, { name });
          } catch (e) {
            out.bad = { name: e.name, code: e.code, message: e.message, isEngineError: e instanceof m.EngineError };
          }
          try {
            await m.DownbeatEngine.create(context, good, { name: "sine.toml" });
          } catch (e) {
            out.rate = e.message;
          }
          await context.close();
          return out;
        },
        { bad: read(project), good: read("test-browser/engine-projects/sine.toml"), name: project },
      );
      assert.equal(r.bad.isEngineError, true);
      assert.equal(r.bad.code, -2);
      assert.equal(`error: ${r.bad.message}`, cli.stderr.trimEnd());
      assert.equal(
        r.rate,
        "sine.toml runs at 48000 Hz but the AudioContext at 44100 Hz: make it with new AudioContext({ sampleRate: 48000 })",
      );
    } finally {
      await page.close();
    }
  });
});

describe("web/README.md's ten-line page", () => {
  test("scripts/play.html plays hello.toml", async () => {
    const root = await startServer({ port: 0, demoRoot: ROOT });
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    try {
      await page.goto(new URL("web/scripts/play.html", root.url).href);
      await page.click("#play");
      await page.waitForFunction(() => window.engine && window.engine.meters().position > 48000, null, { timeout: 10000 });
      let peak = 0;
      for (let i = 0; i < 50 && peak === 0; i++) {
        peak = await page.evaluate(() => window.engine.meters().peak(0));
        await page.waitForTimeout(20);
      }
      assert.ok(peak > 0, "it makes sound");
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await root.close();
    }
  });
});
