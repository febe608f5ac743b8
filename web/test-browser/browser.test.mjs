// Browser tests of the demo: headless Chromium (the Debian package) driven by playwright-core.
//
//   cd web && node --test test-browser/
//
// Needs /usr/bin/chromium (or CHROMIUM=/path/to/chrome) and a built @downbeat/ringbuf
// (`npm run build`): the server maps /ringbuf/ to packages/ringbuf/dist/, or to RINGBUF_DIST if
// set (to run the same tests against another build, e.g. a deliberately broken one).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { RINGBUF_ROOT as DEFAULT_RINGBUF_ROOT, startServer } from "../demo/serve.mjs";
import { EXECUTABLE, launchChromium } from "./chromium.mjs";

const RINGBUF_ROOT = process.env.RINGBUF_DIST ?? DEFAULT_RINGBUF_ROOT;

let server;
let browser;
let closeBrowser;

before(async () => {
  assert.ok(existsSync(EXECUTABLE), `no Chromium at ${EXECUTABLE} (set CHROMIUM=...)`);
  assert.ok(
    existsSync(join(RINGBUF_ROOT, "index.js")),
    `${RINGBUF_ROOT}/index.js is missing: build @downbeat/ringbuf first (cd web && npm run build)`,
  );
  server = await startServer({ port: 0, ringbufRoot: RINGBUF_ROOT });
  ({ browser, close: closeBrowser } = await launchChromium());
});

after(async () => {
  await closeBrowser?.();
  await server?.close();
});

/** Opens `path` on the server in a new page; page errors fail the test that made it. */
async function open(path) {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(new URL(path, server.url).href);
  return { page, errors };
}

const stats = (page) => page.evaluate(() => ({ ...window.demoStats }));

describe("server", () => {
  test("serves the demo and the package with isolation headers and JS MIME types", async () => {
    for (const path of ["", "main.js", "karplus-processor.js", "ringbuf/index.js", "ringbuf/ringbuffer.js"]) {
      const res = await fetch(new URL(path, server.url));
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get("cross-origin-opener-policy"), "same-origin", path);
      assert.equal(res.headers.get("cross-origin-embedder-policy"), "require-corp", path);
      assert.equal(res.headers.get("cross-origin-resource-policy"), "same-origin", path);
      if (path.endsWith(".js")) assert.match(res.headers.get("content-type"), /^text\/javascript/, path);
    }
    const missing = await fetch(new URL("nope.js", server.url));
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get("cross-origin-embedder-policy"), "require-corp");
    const escape = await fetch(new URL("/ringbuf/..%2f..%2fpackage.json", server.url));
    assert.equal(escape.status, 404);
  });
});

describe("demo page", () => {
  test("is cross-origin isolated, with SharedArrayBuffer and playbackStats", async () => {
    const { page, errors } = await open("/");
    try {
      const r = await page.evaluate(() => ({
        isolated: self.crossOriginIsolated,
        sab: typeof SharedArrayBuffer,
        playbackStats: "playbackStats" in AudioContext.prototype,
      }));
      assert.equal(r.isolated, true);
      assert.equal(r.sab, "function");
      // Not required by the demo, but the benchmark relies on it: say so if it goes away.
      assert.equal(r.playbackStats, true, "AudioContext.playbackStats is missing: the benchmark cannot count underruns");
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });

  for (const mode of ["ring", "postmessage"]) {
    test(`${mode} mode: strums reach the worklet and amplitudes come back`, async () => {
      // 64 strings over three worklets of 24, 24 and 16 strings.
      const strings = 64;
      const { page, errors } = await open(`/?mode=${mode}&strings=${strings}&perNode=24&auto=0&strumOnStart=0&autostart=1`);
      try {
        await page.waitForFunction(() => window.demoStats.running && window.demoStats.ampFramesReceived > 20, null, {
          timeout: 10000,
        });
        let s = await stats(page);
        assert.equal(s.mode, mode);
        assert.equal(s.error, null);
        assert.equal(s.worklets, 3);
        assert.equal(s.strumsReceived, 0, "nothing strummed yet");
        assert.deepEqual(await page.evaluate(() => window.demo.amplitudes()), new Array(strings).fill(0), "silent before any strum");

        // One strum of string 50 (the third worklet's string 2): only string 50 rings.
        assert.equal(await page.evaluate(() => window.demo.strum(50, 0.9)), true);
        await page.waitForFunction(() => window.demoStats.strumsReceived === 1 && window.demo.amplitudes()[50] > 0, null, {
          timeout: 5000,
        });
        const amps = await page.evaluate(() => window.demo.amplitudes());
        assert.ok(amps[50] > 0.05 && amps[50] <= 0.9, `string 50 amplitude ${amps[50]}`);
        assert.deepEqual(amps.map((a, i) => [i, a]).filter(([i, a]) => i !== 50 && a !== 0), [], "only string 50 was strummed");

        // Strum all: every strum arrives, every string rings.
        await page.evaluate(() => window.demo.strumAll());
        await page.waitForFunction((n) => window.demoStats.strumsReceived === n + 1, strings, { timeout: 5000 });
        await page.waitForFunction(() => window.demo.amplitudes().every((a) => a > 0), null, { timeout: 5000 });

        const before = await stats(page);
        await page.waitForTimeout(300);
        s = await stats(page);
        assert.ok(s.ampFramesReceived > before.ampFramesReceived, "amplitude frames keep coming");
        assert.ok(s.blocks > before.blocks, "the worklet keeps rendering");
        assert.equal(s.strumsSent, strings + 1);
        assert.equal(s.strumsRejected, 0);
        assert.ok(s.peakAmp > 0);
        if (mode === "ring") {
          assert.equal(s.ampFramesViaPort, 0, "ring mode: no amplitude frame may come by postMessage");
          assert.equal(s.workletPortMessages, 0, "ring mode: no strum may go by postMessage");
          // Every block's frame arrives through the ring, minus the ones still in it or dropped.
          assert.ok(s.ampFramesReceived + s.ampFramesDropped >= s.blocks - 130, JSON.stringify(s));
        } else {
          assert.ok(s.ampFramesViaPort > 0);
          assert.equal(s.ampFramesViaPort, s.ampFramesReceived);
          assert.equal(s.workletPortMessages, 1 + 3, "one message per strum, one per worklet per strum-all");
        }
        assert.deepEqual(errors, []);
      } finally {
        await page.close();
      }
    });
  }

  test("auto-strum traffic flows both ways in both modes, switching modes in place", async () => {
    const { page, errors } = await open("/?mode=ring&strings=256&strumMs=50&autostart=1");
    try {
      for (const mode of ["ring", "postmessage"]) {
        if (mode !== "ring") await page.evaluate((m) => window.demo.start({ mode: m }), mode);
        await page.waitForFunction(
          () =>
            window.demoStats.running &&
            window.demoStats.strumsReceived >= 256 * 8 &&
            window.demoStats.ampFramesReceived > 200 &&
            window.demoStats.fps > 0,
          null,
          { timeout: 10000 },
        );
        const s = await stats(page);
        assert.equal(s.mode, mode);
        assert.ok(s.strumsReceived <= s.strumsSent);
        assert.ok(s.fps > 0 && s.rafCount > 10, "animation frames run");
        assert.equal(s.playbackStatsAvailable, true);
        assert.equal(s.ampFramesViaPort > 0, mode === "postmessage");
      }
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
    }
  });
});

describe("offline render", () => {
  for (const [query, frames] of [
    ["", 480000], // the default: 10 s at 48 kHz through a 4096-sample ring
    ["?seconds=2&capacity=1021&seed=99", 96000], // a prime capacity: reads straddle the wrap too
  ]) {
    test(`Worker -> ring -> AudioWorklet is sample-exact (offline.html${query})`, async () => {
      const { page, errors } = await open(`/offline.html${query}`);
      try {
        const r = await page.evaluate(() =>
          Promise.race([window.offlineDone, new Promise((ok) => setTimeout(() => ok({ error: "timed out after 20 s" }), 20000))]),
        );
        assert.equal(r.error, undefined, r.error);
        assert.equal(r.expectedFrames, frames);
        assert.equal(r.frames, frames);
        assert.equal(r.consumed, frames, "the worklet popped every sample");
        assert.equal(r.underruns, 0);
        assert.equal(r.mismatches, 0, `first mismatch at ${r.firstMismatch}: ${JSON.stringify(r.firstMismatchValues)}`);
        assert.ok(r.wraps >= 20, `the ring wrapped ${r.wraps} times`);
        assert.equal(r.processorError, null);
        assert.equal(r.producer.pushed, frames);
        assert.deepEqual(errors, []);
      } finally {
        await page.close();
      }
    });
  }
});
