// `node bench/browser.mjs [--quick] [--json] [--runs N] [--seconds S] [--modes ring,postmessage]`
//
// The browser benchmark, after karplus-stress-tester: the demo page (web/demo) runs N
// Karplus-Strong strings in an AudioWorklet while the main thread strums all of them every
// 200 ms and draws their amplitudes every animation frame. For each transport (our ring,
// postMessage) it finds the largest N that plays S seconds (10; 2 with --quick) with zero
// underruns, by AudioContext.playbackStats: doubling from 128 until a probe glitches, then
// bisection down to 5 % (12.5 % with --quick). It also reports the UI frame rate at that N.
//
// Headless Chromium renders to a fake output device in real time, so underruns are real
// deadline misses of the audio thread. Each probe is a fresh page in a fresh browser context;
// the first seconds (JIT warm-up, context start) are not counted.
//
// Needs /usr/bin/chromium (or CHROMIUM=...) and a built @downbeat/ringbuf (npm run build).
// With --json, stdout is one JSON object; progress goes to stderr.

import os from "node:os";
import { chromium } from "playwright-core";
import { startServer } from "../demo/serve.mjs";
import { CHROMIUM_ARGS, EXECUTABLE } from "../test-browser/chromium.mjs";

const args = process.argv.slice(2);
const has = (f) => args.includes(f);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const json = has("--json");
const quick = has("--quick");
const runs = Math.max(1, Number(opt("--runs", 1)) | 0);
const seconds = Number(opt("--seconds", quick ? 2 : 10));
const warmup = Number(opt("--warmup", quick ? 1 : 2));
const tolerance = Number(opt("--tolerance", quick ? 0.125 : 0.05));
const startStrings = Number(opt("--start", 128)) | 0;
const maxStrings = Number(opt("--max", 65536)) | 0;
const strumMs = Number(opt("--strum-ms", 200));
const modes = opt("--modes", "ring,postmessage").split(",");
const IMPL = { ring: "downbeat-ring", postmessage: "postmessage" };

const log = (...a) => (json ? console.error : console.log)(...a);
const t0 = performance.now();

const server = await startServer({ port: 0 });
const browser = await chromium.launch({
  executablePath: EXECUTABLE,
  // Not playwright's headless mode, which adds --mute-audio: see chromium.mjs.
  headless: false,
  args: CHROMIUM_ARGS,
});

/** Plays `strings` strings over `mode` for `seconds` after a warm-up; counts underruns. */
async function probe(mode, strings) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  try {
    const q = new URLSearchParams({ mode, strings, strumMs, auto: 1, viz: 1, autostart: 1 });
    await page.goto(`${server.url}?${q}`);
    await page.waitForFunction(() => window.demoStats.running || window.demoStats.error, null, { timeout: 30000 });
    await page.waitForTimeout(warmup * 1000);
    const a = await page.evaluate(() => window.demo.snapshot());
    await page.waitForTimeout(seconds * 1000);
    const b = await page.evaluate(() => window.demo.snapshot());
    if (a.error || b.error || errors.length) throw new Error(a.error ?? b.error ?? errors.join("; "));
    if (Number.isNaN(a.underrunEvents)) throw new Error("AudioContext.playbackStats is not available");
    const wall = (b.now - a.now) / 1000;
    const r = {
      mode,
      strings,
      underruns: b.underrunEvents - a.underrunEvents,
      underrunSeconds: +(b.underrunDuration - a.underrunDuration).toFixed(4),
      fps: +((b.rafCount - a.rafCount) / wall).toFixed(1),
      // Audio blocks rendered per block the clock asked for (1 = the worklet kept up).
      blockRate: +(((b.blocks - a.blocks) * 128) / b.sampleRate / wall).toFixed(3),
      strumsPerSecond: Math.round((b.strumsReceived - a.strumsReceived) / wall),
      ampFramesPerSecond: Math.round((b.ampFramesReceived - a.ampFramesReceived) / wall),
      sampleRate: b.sampleRate,
    };
    r.pass = r.underruns === 0;
    return r;
  } finally {
    await context.close();
  }
}

/** Doubling, then bisection: the largest string count with zero underruns. */
async function search(mode) {
  const probes = [];
  const run = async (n) => {
    const r = await probe(mode, n);
    probes.push(r);
    log(
      `  ${mode.padEnd(11)} ${String(n).padStart(6)} strings: ${r.pass ? "ok    " : "GLITCH"} ` +
        `${r.underruns} underruns (${r.underrunSeconds} s), ${r.fps} fps, blocks ${r.blockRate}x, ` +
        `${r.strumsPerSecond} strums/s, ${r.ampFramesPerSecond} amp frames/s`,
    );
    return r.pass;
  };
  let lo = 0; // largest passing count seen
  let hi = 0; // smallest failing count seen (0: none yet)
  let n = Math.max(1, startStrings);
  if (await run(n)) {
    lo = n;
    while (n * 2 <= maxStrings) {
      n *= 2;
      if (await run(n)) lo = n;
      else {
        hi = n;
        break;
      }
    }
  } else {
    hi = n;
    while (n > 1) {
      n = Math.floor(n / 2);
      if (await run(n)) {
        lo = n;
        break;
      }
      hi = n;
    }
  }
  if (hi) {
    while (hi - lo > Math.max(1, Math.ceil(lo * tolerance))) {
      const step = lo >= 256 ? 16 : 1; // round probes to tidy numbers
      let mid = Math.round((lo + hi) / 2 / step) * step;
      if (mid <= lo || mid >= hi) mid = Math.floor((lo + hi) / 2);
      if (await run(mid)) lo = mid;
      else hi = mid;
    }
  }
  const atMax = probes.filter((p) => p.strings === lo && p.pass).at(-1);
  return { mode, max: lo, firstFailure: hi || null, fpsAtMax: atMax ? atMax.fps : null, probes };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const stat = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs), runs: xs.length });

const version = browser.version();
log(
  `web-browser: max strings with zero underruns over ${seconds} s probes (warm-up ${warmup} s), ` +
    `Chromium ${version}${quick ? " (quick: numbers rough)" : ""}`,
);
const found = Object.fromEntries(modes.map((m) => [m, []]));
try {
  for (let r = 0; r < runs; r++) {
    for (const mode of modes) {
      if (!IMPL[mode]) throw new Error(`unknown mode ${mode}`);
      found[mode].push(await search(mode));
    }
  }
} finally {
  await browser.close();
  await server.close();
}

const results = [];
for (const mode of modes) {
  const s = found[mode];
  results.push({ case: "max_strings_zero_underruns", impl: IMPL[mode], unit: "strings", ...stat(s.map((x) => x.max)) });
  const fps = s.map((x) => x.fpsAtMax).filter((x) => x !== null);
  if (fps.length) results.push({ case: "ui_fps_at_max_strings", impl: IMPL[mode], unit: "fps", ...stat(fps) });
}
const ratios = {};
if (found.ring && found.postmessage) {
  const ring = median(found.ring.map((x) => x.max));
  const pm = median(found.postmessage.map((x) => x.max));
  ratios.max_strings_ring_vs_postmessage = pm > 0 ? +(ring / pm).toFixed(3) : null;
}
const cpus = os.cpus();
const machine = `${cpus.length} cpus, ${cpus[0]?.model ?? os.arch()}, Chromium ${version}`;
const elapsed = (performance.now() - t0) / 1000;
const report = {
  suite: "web-browser",
  machine,
  results,
  ratios,
  config: { probeSeconds: seconds, warmupSeconds: warmup, tolerance, strumMs, quick, elapsedSeconds: +elapsed.toFixed(1) },
  probes: Object.values(found).flat().flatMap((s) => s.probes),
};

if (json) {
  console.log(JSON.stringify(report));
} else {
  console.log();
  for (const mode of modes) {
    for (const s of found[mode]) {
      console.log(
        `${IMPL[mode].padEnd(14)} max ${String(s.max).padStart(6)} strings with zero underruns ` +
          `(first glitch at ${s.firstFailure ?? "none"}), UI ${s.fpsAtMax ?? "–"} fps there`,
      );
    }
  }
  if (ratios.max_strings_ring_vs_postmessage !== undefined) {
    console.log(`ring / postMessage: ${ratios.max_strings_ring_vs_postmessage}x`);
  }
  console.log(`${machine}; ${elapsed.toFixed(0)} s`);
}
