// `node bench/browser.mjs [--quick] [--json] [--runs N] [--cases karplus,sines,synth,offline,size]`
//
// The browser benchmark, in headless Chromium (the Debian package, driven by playwright-core).
// Live cases find the largest count that plays S seconds (10; 1 with --quick) with zero
// underruns, by AudioContext.playbackStats: doubling from a start count until a probe glitches,
// then bisection down to 5 %. Headless Chromium renders to a fake output device in real time, so
// underruns are real deadline misses of the audio thread. Each probe is a fresh page in a fresh
// browser context; the first seconds (JIT warm-up, context start) are not counted.
//
// * karplus (after karplus-stress-tester): the demo page (web/demo) plays N Karplus-Strong
//   strings while the main thread strums all of them every 200 ms and draws every animation
//   frame. Modes: `ring` and `postmessage` (the JavaScript processor over our ring or
//   postMessage) and `wasm` (N strings as voices of `strings` nodes, 100 to a node, in the wasm
//   engine, strums as note ons through its control ring). Ratio: wasm / ring (target >= 2).
// * sines: N `sine` nodes into the output in the wasm engine against N native OscillatorNodes
//   into a GainNode (web/demo/engine-bench.html). Ratio: wasm / native (target >= 1).
// * synth: N voices of the engine's `synth`, every one held by a note on.
// * offline: a project rendered through an OfflineAudioContext and the wasm engine against
//   `downbeat run P --device offline` (the native binary, release by default) on this machine;
//   ratio native time / wasm time (the wasm engine's speed relative to native: 1 = as fast).
// * size: the wasm binary, raw and gzipped.
//
// --quick is the smoke run web/ci.sh makes so the bench cannot rot: one short probe per live
// case, 0.5 s offline renders, the debug binary if there is no release one. Its numbers mean
// nothing. With --json, stdout is one JSON object (suite "web-browser"); progress goes to stderr.
//
// Needs /usr/bin/chromium (or CHROMIUM=...), built packages (cd web && npm run build) and, for
// the offline case, a native binary (cargo build --release -p downbeat-cli, or --downbeat PATH).

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { ENGINE_ROOT, startServer } from "../demo/serve.mjs";
import { CHROMIUM_ARGS, EXECUTABLE } from "../test-browser/chromium.mjs";

const REPO = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const args = process.argv.slice(2);
const has = (f) => args.includes(f);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const json = has("--json");
const quick = has("--quick");
const runs = Math.max(1, Number(opt("--runs", 1)) | 0);
const seconds = Number(opt("--seconds", quick ? 1 : 10));
const warmup = Number(opt("--warmup", quick ? 0.5 : 2));
const tolerance = Number(opt("--tolerance", 0.05));
const strumMs = Number(opt("--strum-ms", 200));
const cases = opt("--cases", "karplus,sines,synth,offline,size").split(",");
const modes = opt("--modes", "ring,postmessage,wasm").split(",");
const offlineSeconds = Number(opt("--offline-seconds", quick ? 0.5 : 10));
const IMPL = { ring: "downbeat-ring", postmessage: "postmessage", wasm: "downbeat-wasm" };
const KNOWN_CASES = ["karplus", "sines", "synth", "offline", "size"];
for (const c of cases) if (!KNOWN_CASES.includes(c)) throw new Error(`unknown case ${c}; expected ${KNOWN_CASES.join(", ")}`);
for (const m of modes) if (!IMPL[m]) throw new Error(`unknown mode ${m}; expected ${Object.keys(IMPL).join(", ")}`);

/** Where each live search starts and stops; --quick probes one count (16, or --start) per implementation. */
const SEARCH = {
  karplus: { start: Number(opt("--start", 128)), max: Number(opt("--max", 65536)) },
  sines: { start: Number(opt("--start", 128)), max: Number(opt("--max", 65536)) },
  synth: { start: Number(opt("--start", 32)), max: Number(opt("--max", 16384)) },
};
if (quick) for (const k of Object.keys(SEARCH)) SEARCH[k] = { start: Number(opt("--start", 16)), max: Number(opt("--start", 16)) };

const log = (...a) => (json ? console.error : console.log)(...a);
const t0 = performance.now();

/** The native binary: --downbeat, else target/release, else (for --quick only) target/debug. */
function nativeBinary() {
  const given = opt("--downbeat", null);
  if (given) return resolve(given);
  const release = join(REPO, "target/release/downbeat");
  if (existsSync(release)) return release;
  const debug = join(REPO, "target/debug/downbeat");
  if (quick && existsSync(debug)) return debug;
  throw new Error(`no native binary at ${release}: cargo build --release -p downbeat-cli (or pass --downbeat PATH)`);
}

const server = await startServer({ port: 0 });
const browser = await chromium.launch({
  executablePath: EXECUTABLE,
  // Not playwright's headless mode, which adds --mute-audio: see chromium.mjs.
  headless: false,
  args: CHROMIUM_ARGS,
});

/** Opens `path` in a fresh context, lets `body(page)` measure, closes the context. */
async function withPage(path, body) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  try {
    await page.goto(new URL(path, server.url).href);
    const r = await body(page);
    if (errors.length) throw new Error(errors.join("; "));
    return r;
  } finally {
    await context.close();
  }
}

/** Waits for the page to run, skips the warm-up, and returns the two snapshots around S seconds. */
async function measure(page, ready, snapshot) {
  await page.waitForFunction(ready, null, { timeout: 60000 });
  await page.waitForTimeout(warmup * 1000);
  const a = await page.evaluate(snapshot);
  await page.waitForTimeout(seconds * 1000);
  const b = await page.evaluate(snapshot);
  if (a.error || b.error) throw new Error(a.error ?? b.error);
  if (Number.isNaN(a.underrunEvents)) throw new Error("AudioContext.playbackStats is not available");
  return [a, b, (b.now - a.now) / 1000];
}

/** Karplus-Strong: `strings` strings over `mode` on the stress page. */
async function probeKarplus(mode, strings) {
  const q = new URLSearchParams({ mode, strings, strumMs, auto: 1, viz: 1, autostart: 1 });
  return withPage(`/?${q}`, async (page) => {
    const [a, b, wall] = await measure(
      page,
      () => window.demoStats.running || window.demoStats.error,
      () => window.demo.snapshot(),
    );
    const r = {
      case: "karplus",
      mode,
      count: strings,
      underruns: b.underrunEvents - a.underrunEvents,
      underrunSeconds: +(b.underrunDuration - a.underrunDuration).toFixed(4),
      fps: +((b.rafCount - a.rafCount) / wall).toFixed(1),
      // Audio blocks rendered per block the clock asked for (1 = the worklet kept up).
      blockRate: +(((b.blocks - a.blocks) * 128) / b.sampleRate / wall).toFixed(3),
      strumsPerSecond: Math.round((b.strumsSent - a.strumsSent) / wall),
      strumsReceivedPerSecond: Math.round((b.strumsReceived - a.strumsReceived) / wall),
      strumsRejected: b.strumsRejected ?? 0,
      strumsDropped: b.strumsDropped ?? 0,
      ampFramesPerSecond: Math.round((b.ampFramesReceived - a.ampFramesReceived) / wall),
      sampleRate: b.sampleRate,
    };
    r.pass = r.underruns === 0;
    return r;
  });
}

/** The engine bench page: `kind` (sines-wasm, sines-native, synth) × `count`. */
async function probeEngine(kind, count) {
  const q = new URLSearchParams({ kind, count, autostart: 1 });
  return withPage(`/engine-bench.html?${q}`, async (page) => {
    const [a, b, wall] = await measure(
      page,
      // Synth: only once every voice's note on went through (a full ring only delays them).
      () => (window.benchStats.running && window.benchStats.eventsPending === 0) || window.benchStats.error,
      () => window.bench.snapshot(),
    );
    const r = {
      case: kind.startsWith("sines") ? "sines" : "synth",
      mode: kind,
      count,
      underruns: b.underrunEvents - a.underrunEvents,
      underrunSeconds: +(b.underrunDuration - a.underrunDuration).toFixed(4),
      fps: +((b.rafCount - a.rafCount) / wall).toFixed(1),
      peak: +b.peak.toFixed(4),
      sampleRate: b.sampleRate,
    };
    // A probe that plays silence, or fewer voices than asked, measured nothing.
    if (!(b.peak > 0)) throw new Error(`${kind} × ${count}: the output is silent (peak ${b.peak})`);
    if (b.engineRefused) throw new Error(`${kind} × ${count}: the engine refused ${b.engineRefused} events (not every voice is held)`);
    r.pass = r.underruns === 0;
    return r;
  });
}

/** Doubling, then bisection: the largest count with zero underruns. */
async function search(label, probe, { start, max }) {
  const probes = [];
  const run = async (n) => {
    const r = await probe(n);
    probes.push(r);
    log(
      `  ${label.padEnd(19)} ${String(n).padStart(6)}: ${r.pass ? "ok    " : "GLITCH"} ` +
        `${r.underruns} underruns (${r.underrunSeconds} s), ${r.fps} fps` +
        (r.blockRate !== undefined
          ? `, blocks ${r.blockRate}x, ${r.strumsPerSecond} strums/s sent, ${r.strumsReceivedPerSecond} received` +
            (r.strumsRejected || r.strumsDropped ? ` (${r.strumsRejected} refused by the ring, ${r.strumsDropped} by the engine)` : "")
          : ""),
    );
    return r.pass;
  };
  let lo = 0; // largest passing count seen
  let hi = 0; // smallest failing count seen (0: none yet)
  let n = Math.max(1, start | 0);
  if (quick) {
    // The smoke run: one probe, whatever it gives (the machine running CI is not quiet).
    if (await run(n)) lo = n;
    else hi = n;
  } else if (await run(n)) {
    lo = n;
    while (n * 2 <= max) {
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
  if (hi && !quick) {
    while (hi - lo > Math.max(1, Math.ceil(lo * tolerance))) {
      const step = lo >= 256 ? 16 : 1; // round probes to tidy numbers
      let mid = Math.round((lo + hi) / 2 / step) * step;
      if (mid <= lo || mid >= hi) mid = Math.floor((lo + hi) / 2);
      if (await run(mid)) lo = mid;
      else hi = mid;
    }
  }
  const atMax = probes.filter((p) => p.count === lo && p.pass).at(-1);
  return { label, max: lo, firstFailure: hi || null, fpsAtMax: atMax ? atMax.fps : null, probes };
}

/** The offline projects: examples/projects, with the length as the CLI would get it. */
const OFFLINE = quick
  ? [{ id: "synth", project: "synth.toml", seconds: offlineSeconds }]
  : [
      { id: "fanin84", project: "fanin84.toml", seconds: offlineSeconds },
      { id: "synth_tune", project: "synth.toml", midi: "tune.mid" },
    ];

/** One browser render: milliseconds from engine creation to the rendered buffer. */
async function offlineWasm(c) {
  return withPage("/engine-bench.html", async (page) => {
    await page.waitForFunction(() => window.bench, null, { timeout: 30000 });
    const r = await page.evaluate(
      (o) => window.bench.offline(o),
      { project: `/projects/${c.project}`, midi: c.midi ? `/projects/${c.midi}` : undefined, seconds: c.seconds, name: c.project },
    );
    if (!(r.peak > 0)) throw new Error(`${c.project}: the browser render is silent`);
    return r;
  });
}

/** One native render of the same project: wall milliseconds of the whole `downbeat run`. */
function offlineNative(c, bin, dir) {
  const out = join(dir, `${c.id}.wav`);
  // One thread, as the wasm engine runs: `downbeat run` uses every core by default.
  const argv = ["run", join(REPO, "examples/projects", c.project), "--device", "offline", "--threads", "1", "--out", out];
  if (c.midi) argv.push("--midi", join(REPO, "examples/projects", c.midi));
  if (c.seconds) argv.push("--seconds", String(c.seconds));
  const t = performance.now();
  const p = spawnSync(bin, argv, { encoding: "utf8" });
  const ms = performance.now() - t;
  if (p.status !== 0) throw new Error(`${bin} ${argv.join(" ")} failed (${p.status}): ${p.stderr}`);
  return { ms, bytes: readFileSync(out).length };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const round = (x) => +x.toFixed(3);
const stat = (xs) => ({ median: round(median(xs)), min: round(Math.min(...xs)), max: round(Math.max(...xs)), runs: xs.length });

const version = browser.version();
log(
  `web-browser: cases ${cases.join(", ")}; live probes of ${seconds} s after ${warmup} s, ` +
    `Chromium ${version}${quick ? " (quick: a smoke run, numbers meaningless)" : ""}`,
);

const results = [];
const ratios = {};
const probes = [];
const summary = [];
const searches = {}; // impl -> [search]
const liveSearch = async (caseName, impl, label, probe) => {
  const s = await search(label, probe, SEARCH[caseName]);
  (searches[`${caseName}/${impl}`] ??= []).push(s);
  probes.push(...s.probes);
};
let tmp = null;
try {
  for (let r = 0; r < runs; r++) {
    if (cases.includes("karplus")) {
      for (const mode of modes) await liveSearch("karplus", IMPL[mode], `karplus ${mode}`, (n) => probeKarplus(mode, n));
    }
    if (cases.includes("sines")) {
      await liveSearch("sines", "downbeat-wasm", "sines wasm", (n) => probeEngine("sines-wasm", n));
      await liveSearch("sines", "web-audio-oscillators", "sines native", (n) => probeEngine("sines-native", n));
    }
    if (cases.includes("synth")) {
      await liveSearch("synth", "downbeat-wasm", "synth voices", (n) => probeEngine("synth", n));
    }
  }
  const UNIT = { karplus: ["max_strings_zero_underruns", "strings"], sines: ["max_sines_zero_underruns", "oscillators"], synth: ["max_voices_zero_underruns", "voices"] };
  for (const [key, list] of Object.entries(searches)) {
    const [caseName, impl] = key.split("/");
    const [name, unit] = UNIT[caseName];
    results.push({ case: name, impl, unit, ...stat(list.map((x) => x.max)) });
    const fps = list.map((x) => x.fpsAtMax).filter((x) => x !== null);
    if (fps.length) results.push({ case: `ui_fps_at_${name.replace("_zero_underruns", "")}`, impl, unit: "fps", ...stat(fps) });
    summary.push(`${name.padEnd(28)} ${impl.padEnd(22)} ${list.map((x) => x.max).join(", ")} (first glitch at ${list.map((x) => x.firstFailure ?? "none").join(", ")})`);
  }
  const maxOf = (key) => (searches[key] ? median(searches[key].map((x) => x.max)) : undefined);
  const ratio = (a, b) => (a !== undefined && b !== undefined ? (b > 0 ? +(a / b).toFixed(3) : null) : undefined);
  const set = (k, v) => v !== undefined && (ratios[k] = v);
  set("max_strings_ring_vs_postmessage", ratio(maxOf("karplus/downbeat-ring"), maxOf("karplus/postmessage")));
  set("max_strings_wasm_vs_js_ring", ratio(maxOf("karplus/downbeat-wasm"), maxOf("karplus/downbeat-ring")));
  set("max_strings_wasm_vs_js_postmessage", ratio(maxOf("karplus/downbeat-wasm"), maxOf("karplus/postmessage")));
  set("max_sines_wasm_vs_oscillator_nodes", ratio(maxOf("sines/downbeat-wasm"), maxOf("sines/web-audio-oscillators")));

  if (cases.includes("offline")) {
    const bin = nativeBinary();
    tmp = mkdtempSync(join(os.tmpdir(), "downbeat-bench-"));
    for (const c of OFFLINE) {
      const wasm = [];
      const native = [];
      let frames = 0;
      let rate = 0;
      for (let k = 0; k < Math.max(runs, quick ? 1 : 3); k++) {
        // Alternated, so drift in the machine hits both.
        const w = await offlineWasm(c);
        frames = w.frames;
        rate = w.sampleRate;
        wasm.push(w.totalMs);
        native.push(offlineNative(c, bin, tmp).ms);
        log(`  offline ${c.id.padEnd(11)} wasm ${w.totalMs.toFixed(0)} ms, native ${native.at(-1).toFixed(0)} ms, ${(frames / rate).toFixed(2)} s of audio`);
      }
      const audio = frames / rate;
      results.push({ case: `offline_${c.id}_ms`, impl: "downbeat-wasm", unit: "ms", ...stat(wasm), audioSeconds: audio });
      results.push({ case: `offline_${c.id}_ms`, impl: "downbeat-native", unit: "ms", ...stat(native), audioSeconds: audio, binary: bin });
      // As every ratio of the suites: above 1 would mean the wasm engine beats the native one.
      const speed = +(median(native) / median(wasm)).toFixed(3);
      ratios[`offline_${c.id}_wasm_speed_vs_native`] = speed;
      summary.push(`offline ${c.id}: wasm ${median(wasm).toFixed(0)} ms, native ${median(native).toFixed(0)} ms for ${audio.toFixed(2)} s of audio: wasm runs at ${speed}x native speed`);
    }
  }
} finally {
  await browser.close();
  await server.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}

if (cases.includes("size")) {
  const wasmPath = join(ENGINE_ROOT, "downbeat_engine.wasm");
  if (!existsSync(wasmPath)) throw new Error(`${wasmPath} is missing: build the engine package (cd web && npm run build)`);
  const bytes = readFileSync(wasmPath);
  const gz = gzipSync(bytes, { level: 9 }).length;
  results.push({ case: "wasm_size_raw", impl: "downbeat-wasm", unit: "bytes", ...stat([bytes.length]) });
  results.push({ case: "wasm_size_gzip", impl: "downbeat-wasm", unit: "bytes", ...stat([gz]) });
  summary.push(`wasm binary: ${bytes.length} bytes, ${gz} gzipped (-9)`);
}

const cpus = os.cpus();
const machine = `${cpus.length} cpus, ${cpus[0]?.model ?? os.arch()}, Chromium ${version}`;
const elapsed = (performance.now() - t0) / 1000;
const report = {
  suite: "web-browser",
  machine,
  results,
  ratios,
  config: { probeSeconds: seconds, warmupSeconds: warmup, tolerance, strumMs, quick, cases, modes, offlineSeconds, elapsedSeconds: +elapsed.toFixed(1) },
  probes,
};

if (json) {
  console.log(JSON.stringify(report));
} else {
  console.log();
  for (const line of summary) console.log(line);
  for (const [k, v] of Object.entries(ratios)) console.log(`${k}: ${v}x`);
  console.log(`${machine}; ${elapsed.toFixed(0)} s`);
}
