// Main thread of the Karplus-Strong demo: starts the worklet, strums the strings, and draws the
// amplitudes that come back, over a ring (@downbeat/ringbuf) or over postMessage; or, in mode
// "wasm", runs the strings as voices of `strings` nodes of a generated project in the wasm engine
// (@downbeat/engine), strummed by note ons through its control ring, its output levels read
// from its meter ring.
//
// The JavaScript strings are spread over AudioWorkletNodes of `perNode` strings each (100 by
// default, as in karplus-stress-tester's usual setting), each with its own pair of rings or its
// own port. The wasm engine runs all the strings in one graph in one AudioWorkletNode.
//
// URL query: ?mode=ring|postmessage|wasm&strings=N&perNode=100&strumMs=200&auto=1&viz=1&autostart=1
//            &strumOnStart=1
// Everything the page shows is also on `window.demoStats` (updated every animation frame), and
// `window.demo` has start(options), stop(), strum(i, strength), strumAll(), amplitudes(),
// snapshot(), and in mode "wasm" pitch() (of the output) and engine() (the running
// DownbeatEngine), for the tests and the benchmark.

import { ParameterWriter, RingBuffer, getStorageForParamQueue } from "/ringbuf/index.js";
import { detectPitch } from "./pitch.js";
import { stringBank, stringNote, stringsProject } from "./projects.js";

/** Modes of the page: the JavaScript strings over two transports, and the wasm engine. */
const MODES = ["ring", "postmessage", "wasm"];
/** The wasm engine is loaded only when its mode is first used, so the other modes run without it. */
let enginePackage = null;
const loadEngine = () => (enginePackage ??= import("/engine/index.js"));

/** Header floats at the start of each amplitude frame (see karplus-processor.js). */
const HEADER = 5;
/** Frames of amplitudes each ring can hold: about 0.35 s of blocks at 48 kHz. */
const AMP_RING_FRAMES = 128;
/** Strings per AudioWorkletNode by default, as in karplus-stress-tester's usual setting. */
const PER_NODE = 100;

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);
const flag = (name, dflt) => (query.has(name) ? !/^(0|false|no|off)$/i.test(query.get(name)) : dflt);

const stats = {
  mode: null,
  strings: 0,
  worklets: 0,
  running: false,
  error: null,
  crossOriginIsolated: self.crossOriginIsolated === true,
  sampleRate: 0,
  playbackStatsAvailable: false,
  underrunEvents: 0,
  underrunDuration: 0,
  totalDuration: 0,
  fps: 0,
  rafCount: 0,
  strumsSent: 0,
  strumsRejected: 0, // ring full: ParameterWriter.enqueueChange returned false
  strumsReceived: 0, // as reported by the worklet (wasm: the note ons the engine took in)
  strumsDropped: 0, // wasm: events the engine refused (its event list full, or an error)
  ampFramesReceived: 0,
  ampFramesViaPort: 0, // amplitude frames that arrived by postMessage (0 in ring mode)
  ampFramesDropped: 0, // reported by the worklet: ring full when it wrote
  workletPortMessages: 0, // control messages the worklet got on its port (0 in ring mode)
  blocks: 0,
  lastMaxAmp: 0,
  peakAmp: 0,
  startedAt: 0,
};
window.demoStats = stats;

let session = null;

function readUi() {
  return {
    mode: $("mode").value,
    strings: Math.max(1, Math.min(65536, $("strings").value | 0)),
    perNode: Math.max(1, $("perNode").value | 0),
    strumMs: Math.max(10, +$("strumMs").value || 200),
    auto: $("auto").checked,
    viz: $("viz").checked,
  };
}

function writeUi(o) {
  $("mode").value = o.mode;
  $("strings").value = o.strings;
  $("perNode").value = o.perNode;
  $("strumMs").value = o.strumMs;
  $("auto").checked = o.auto;
  $("viz").checked = o.viz;
}

function resetStats(o) {
  Object.assign(stats, {
    mode: o.mode,
    strings: o.strings,
    worklets: 0,
    running: false,
    error: null,
    sampleRate: 0,
    underrunEvents: 0,
    underrunDuration: 0,
    totalDuration: 0,
    strumsSent: 0,
    strumsRejected: 0,
    strumsReceived: 0,
    strumsDropped: 0,
    ampFramesReceived: 0,
    ampFramesViaPort: 0,
    ampFramesDropped: 0,
    workletPortMessages: 0,
    blocks: 0,
    lastMaxAmp: 0,
    peakAmp: 0,
  });
}

/**
 * Takes in one amplitude frame of worklet `part` (from its ring or a message): the newest
 * amplitudes land in the session's all-strings array, the header in the part's counters.
 */
function takeFrame(s, part, f) {
  part.blocks = f[0];
  part.strumsReceived = f[1];
  part.framesDropped = f[2];
  part.portMessages = f[4];
  const amps = s.amps;
  for (let i = 0, base = part.base, n = part.n; i < n; i++) amps[base + i] = f[HEADER + i];
  s.fresh = true;
}

/** Sums the parts' counters into the stats (blocks: the slowest part's count). */
function sumParts(s) {
  let blocks = Infinity;
  let received = 0;
  let dropped = 0;
  let messages = 0;
  for (const p of s.parts) {
    if (p.blocks < blocks) blocks = p.blocks;
    received += p.strumsReceived;
    dropped += p.framesDropped;
    messages += p.portMessages;
  }
  stats.blocks = blocks === Infinity ? 0 : blocks;
  stats.strumsReceived = received;
  stats.ampFramesDropped = dropped;
  stats.workletPortMessages = messages;
}

/** Makes worklet `k` of the session: strings base .. base + n - 1. */
function makePart(s, k, base, n) {
  const { ctx, o } = s;
  const frameLen = HEADER + n;
  const part = { k, base, n, frameLen, latest: new Float32Array(frameLen), blocks: 0, strumsReceived: 0, framesDropped: 0, portMessages: 0 };
  const processorOptions = { mode: o.mode, strings: n };
  if (o.mode === "ring") {
    // Strums: Rust's ParamQueue format, id = string index (within this worklet), value = strength.
    const paramSab = getStorageForParamQueue(Math.max(256, 4 * n));
    part.params = new ParameterWriter(new RingBuffer(paramSab, Uint32Array));
    // Amplitudes: one record per block, HEADER + n floats.
    const ampSab = RingBuffer.getStorageForCapacity(AMP_RING_FRAMES * frameLen, Float32Array, frameLen);
    part.ampRing = new RingBuffer(ampSab, Float32Array);
    // Bound once: keeps only the newest frame of what is drained.
    part.drain = (st, o1, n1, o2, n2) => {
      const total = n1 + n2;
      const start = total - frameLen; // the last whole record
      const latest = part.latest;
      for (let j = 0; j < frameLen; j++) {
        const i = start + j;
        latest[j] = i < n1 ? st[o1 + i] : st[o2 + i - n1];
      }
      return total;
    };
    Object.assign(processorOptions, { paramSab, ampSab });
  }
  const node = (part.node = new AudioWorkletNode(ctx, "karplus", {
    numberOfInputs: 0,
    numberOfOutputs: 1,
    outputChannelCount: [2],
    processorOptions,
  }));
  part.ready = new Promise((ok, fail) => {
    node.onprocessorerror = (e) => fail(new Error(`processor error: ${e.message ?? e}`));
    node.port.onmessage = (e) => {
      const m = e.data;
      if (m instanceof Float32Array) {
        stats.ampFramesReceived++;
        stats.ampFramesViaPort++;
        takeFrame(s, part, m);
      } else if (m && m.type === "ready") ok(m);
    };
  });
  node.connect(ctx.destination);
  return part;
}

async function start(options = {}) {
  await stop();
  const o = { ...readUi(), ...options };
  if (!MODES.includes(o.mode)) throw new Error(`unknown mode ${o.mode}; expected ${MODES.join(", ")}`);
  writeUi(o);
  resetStats(o);
  const n = o.strings;
  const perNode = Math.max(1, o.perNode | 0 || PER_NODE);
  const s = { o, n, perNode, amps: new Float32Array(n), parts: [], fresh: false, timer: 0 };
  session = s;
  $("status").textContent = "starting…";

  try {
    if (!self.crossOriginIsolated) throw new Error("not cross-origin isolated: no SharedArrayBuffer");
    const ctx = (s.ctx = new AudioContext({ latencyHint: "interactive" }));
    if (o.mode === "wasm") {
      await startWasm(s);
    } else {
      await ctx.audioWorklet.addModule("karplus-processor.js");
      for (let base = 0, k = 0; base < n; base += perNode, k++) {
        s.parts.push(makePart(s, k, base, Math.min(perNode, n - base)));
      }
    }
    await ctx.resume();
    await Promise.all(s.parts.map((p) => p.ready));
    for (const p of s.parts) {
      p.node.onprocessorerror = (e) => {
        stats.error = `processor error: ${e.message ?? e}`;
        $("status").textContent = stats.error;
      };
    }
    stats.sampleRate = ctx.sampleRate;
    stats.worklets = s.engine ? 1 : s.parts.length;
    stats.playbackStatsAvailable = !!ctx.playbackStats;
    stats.running = true;
    stats.startedAt = performance.now();
    if (o.auto) s.timer = setInterval(strumAll, o.strumMs);
    if (o.strumOnStart !== false) strumAll();
    $("status").textContent = `running: ${o.mode}, ${n} strings in ${stats.worklets} worklet(s), ${ctx.sampleRate} Hz`;
    $("stop").disabled = false;
    $("strum").disabled = false;
  } catch (e) {
    stats.error = String(e && e.message ? e.message : e);
    $("status").textContent = `error: ${stats.error}`;
    await stop();
    throw e;
  }
  return stats;
}

async function stop() {
  const s = session;
  session = null;
  if (!s) return;
  clearInterval(s.timer);
  stats.running = false;
  if (s.engine) {
    try {
      s.engine.node.disconnect();
    } catch {}
  }
  for (const p of s.parts) {
    try {
      p.node.port.postMessage({ type: "stop" });
      p.node.disconnect();
    } catch {}
  }
  if (s.ctx && s.ctx.state !== "closed") await s.ctx.close().catch(() => {});
  $("status").textContent = "stopped";
  $("stop").disabled = true;
  $("strum").disabled = true;
}

/**
 * Mode "wasm": one engine running `stringsProject(n)` (string i is a voice of the `strings` node
 * `stringBank(i)`, struck at `stringNote(i)` as the JavaScript strings are tuned), at the
 * context's rate, in blocks of 128.
 */
async function startWasm(s) {
  const { Controller, DownbeatEngine } = await loadEngine();
  const text = stringsProject(s.n, { sampleRate: s.ctx.sampleRate, blockSize: 128 });
  // Room in the control ring for a few strum-alls in flight: the page strums every string at once.
  s.controlCapacity = Math.max(1024, 4 * s.n);
  s.engine = await DownbeatEngine.create(s.ctx, text, { name: `karplus-${s.n}.toml`, controlCapacity: s.controlCapacity });
  s.engine.node.connect(s.ctx.destination);
  // The page is the ring's one writer; its own Controller also says how much of the ring is
  // still waiting for the worklet (room()), which "strums received" needs.
  s.ctl = new Controller(s.engine.controller());
  // A tap for pitch() (the tests check that a strum plays its string's pitch).
  s.analyser = new AnalyserNode(s.ctx, { fftSize: 4096 });
  s.engine.node.connect(s.analyser);
  s.timeData = new Float32Array(s.analyser.fftSize);
}

/** Mode "wasm": the pitch of the engine's output now (Hz, 0 for silence). */
function pitch() {
  const s = session;
  if (!s || !s.analyser) return 0;
  s.analyser.getFloatTimeDomainData(s.timeData);
  return detectPitch(s.timeData, s.ctx.sampleRate);
}

/** One strum in the wasm engine: a note on of string `i`'s bank at its pitch, velocity = strength. */
function strumWasm(s, i, strength) {
  // Velocity is 0..1 as strength is; a strength of 0 would be a note off.
  const velocity = Math.max(1 / 127, Math.min(1, strength));
  try {
    s.ctl.noteOn(stringNote(i), velocity, { instrument: stringBank(i) });
  } catch (e) {
    if (e && e.name === "ControlRingFull") return false;
    throw e;
  }
  return true;
}

/** Strums string `index` with `strength` (0..1): one event down to its worklet. */
function strum(index, strength) {
  const s = session;
  if (!s || !stats.running || !(index >= 0 && index < s.n)) return false;
  if (s.engine) {
    const ok = strumWasm(s, index, strength);
    if (ok) stats.strumsSent++;
    else stats.strumsRejected++;
    return ok;
  }
  const p = s.parts[Math.floor(index / s.perNode)];
  const i = index - p.base;
  if (s.o.mode === "ring") {
    const ok = p.params.enqueueChange(i, strength);
    if (ok) stats.strumsSent++;
    else stats.strumsRejected++;
    return ok;
  }
  p.node.port.postMessage({ type: "strum", data: new Float32Array([i, strength]) });
  stats.strumsSent++;
  return true;
}

/** Strums every string with a random strength: n events down to the worklets. */
function strumAll() {
  const s = session;
  if (!s || !stats.running) return;
  if (s.engine) {
    for (let i = 0; i < s.n; i++) {
      if (strumWasm(s, i, 0.5 + 0.5 * Math.random())) stats.strumsSent++;
      else stats.strumsRejected++;
    }
    return;
  }
  for (const p of s.parts) {
    const n = p.n;
    if (s.o.mode === "ring") {
      for (let i = 0; i < n; i++) {
        if (p.params.enqueueChange(i, 0.5 + 0.5 * Math.random())) stats.strumsSent++;
        else stats.strumsRejected++;
      }
    } else {
      // One message per worklet per strum-all, carrying [index, strength] pairs (batched).
      const d = new Float32Array(2 * n);
      for (let i = 0; i < n; i++) {
        d[2 * i] = i;
        d[2 * i + 1] = 0.5 + 0.5 * Math.random();
      }
      p.node.port.postMessage({ type: "strum", data: d });
      stats.strumsSent += n;
    }
  }
}

// ---- every animation frame: drain, draw, stats ----

const canvas = $("canvas");
const g2d = canvas.getContext("2d");
let fpsFrames = 0;
let fpsSince = performance.now();
let uiSince = 0;

function draw(s) {
  const w = canvas.width;
  const h = canvas.height;
  g2d.fillStyle = "#111";
  g2d.fillRect(0, 0, w, h);
  // One bar per pixel column at most (the loudest of the strings it covers), on whole pixels:
  // software canvas is slow at thousands of anti-aliased sub-pixel rectangles.
  const n = s.n;
  const a = s.amps;
  const cols = Math.min(n, w);
  g2d.fillStyle = "#6cf";
  for (let c = 0; c < cols; c++) {
    const i0 = Math.floor((c * n) / cols);
    const i1 = Math.floor(((c + 1) * n) / cols);
    let v = 0;
    for (let i = i0; i < i1; i++) if (a[i] > v) v = a[i];
    const x0 = Math.floor((c * w) / cols);
    const x1 = Math.floor(((c + 1) * w) / cols);
    const bh = Math.round(Math.min(1, v) * h);
    if (bh > 0) g2d.fillRect(x0, h - bh, Math.max(1, x1 - x0 - (cols < w / 2 ? 1 : 0)), bh);
  }
}

/**
 * Mode "wasm": the newest status from the engine's meter ring. The engine meters its output, not
 * each string (no per-node amplitudes come back), so the page shows the output's peak. Strums
 * received: the note ons the worklet has taken out of the control ring (sent minus what is still
 * in it) minus those the engine refused (its event list full, or an error), both of which it
 * reports; here every record in the ring is a strum.
 */
function readWasm(s) {
  const m = s.engine.meters();
  let peak = 0;
  for (let c = 0; c < s.engine.channels; c++) if (m.peak(c) > peak) peak = m.peak(c);
  stats.lastMaxAmp = peak;
  if (peak > stats.peakAmp) stats.peakAmp = peak;
  stats.ampFramesReceived++;
  stats.blocks = Math.floor(m.position / 128);
  stats.strumsDropped = m.dropped + m.eventErrors;
  const waiting = s.controlCapacity - s.ctl.room();
  stats.strumsReceived = stats.strumsSent - waiting - stats.strumsDropped;
  s.levelHistory ??= [];
  s.levelHistory.push(peak);
  if (s.levelHistory.length > canvas.width) s.levelHistory.shift();
}

/** Mode "wasm": the output's peak on a -60..0 dBFS scale, scrolling, one pixel column per animation frame. */
function drawLevels(s) {
  const w = canvas.width;
  const h = canvas.height;
  g2d.fillStyle = "#111";
  g2d.fillRect(0, 0, w, h);
  g2d.fillStyle = "#6cf";
  const hist = s.levelHistory ?? [];
  for (let i = 0; i < hist.length; i++) {
    const db = hist[i] > 0 ? 20 * Math.log10(hist[i]) : -Infinity;
    const bh = Math.round(Math.max(0, Math.min(1, (db + 60) / 60)) * h);
    if (bh > 0) g2d.fillRect(i, h - bh, 1, bh);
  }
}

function frame(now) {
  stats.rafCount++;
  fpsFrames++;
  if (now - fpsSince >= 1000) {
    stats.fps = (1000 * fpsFrames) / (now - fpsSince);
    fpsFrames = 0;
    fpsSince = now;
  }
  const s = session;
  if (s && stats.running) {
    if (s.engine) readWasm(s);
    if (s.o.mode === "ring") {
      for (const p of s.parts) {
        const avail = p.ampRing.availableRead();
        if (avail >= p.frameLen) {
          const got = p.ampRing.readCallbackWithOffset(avail, p.drain);
          stats.ampFramesReceived += got / p.frameLen;
          takeFrame(s, p, p.latest);
        }
      }
    }
    if (s.fresh) {
      s.fresh = false;
      sumParts(s);
      let m = 0;
      for (let i = 0; i < s.n; i++) if (s.amps[i] > m) m = s.amps[i];
      stats.lastMaxAmp = m;
      if (m > stats.peakAmp) stats.peakAmp = m;
    }
    const ps = s.ctx.playbackStats;
    if (ps) {
      stats.underrunEvents = ps.underrunEvents;
      stats.underrunDuration = ps.underrunDuration;
      stats.totalDuration = ps.totalDuration;
    }
    if ($("viz").checked) (s.engine ? drawLevels : draw)(s);
  }
  if (now - uiSince > 250) {
    uiSince = now;
    for (const k of ["underrunEvents", "strumsSent", "strumsReceived", "ampFramesReceived", "ampFramesDropped", "blocks", "worklets", "sampleRate"]) {
      $(`s-${k}`).textContent = String(stats[k]);
    }
    $("s-underrunDuration").textContent = stats.underrunDuration.toFixed(3);
    $("s-underrunDuration").className = stats.underrunEvents ? "bad" : "";
    $("s-underrunEvents").className = stats.underrunEvents ? "bad" : "";
    $("s-fps").textContent = stats.fps.toFixed(1);
    $("s-lastMaxAmp").textContent = stats.lastMaxAmp.toFixed(3);
  }
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);

// ---- controls ----

$("start").onclick = () => start().catch(() => {});
$("stop").onclick = () => stop();
$("strum").onclick = () => strumAll();
for (const id of ["mode", "strings", "perNode"]) $(id).onchange = () => session && start().catch(() => {});
$("auto").onchange = $("strumMs").onchange = () => {
  const s = session;
  if (!s) return;
  clearInterval(s.timer);
  s.o = { ...s.o, ...readUi(), mode: s.o.mode, strings: s.o.strings };
  if (s.o.auto) s.timer = setInterval(strumAll, s.o.strumMs);
};

const initial = {
  mode: MODES.includes(query.get("mode")) ? query.get("mode") : "ring",
  strings: Math.max(1, Math.min(65536, parseInt(query.get("strings") ?? "256", 10) || 256)),
  strumMs: Math.max(10, +(query.get("strumMs") ?? 200) || 200),
  auto: flag("auto", true),
  viz: flag("viz", true),
  strumOnStart: flag("strumOnStart", true),
  perNode: Math.max(1, parseInt(query.get("perNode") ?? String(PER_NODE), 10) || PER_NODE),
};
writeUi(initial);
stats.mode = initial.mode;
stats.strings = initial.strings;

/** The newest amplitude frame's per-string amplitudes, as a plain array. */
const amplitudes = () => (session ? Array.from(session.amps) : []);

/**
 * Cumulative counters read now (playbackStats straight from the context, not as of the last
 * animation frame): the benchmark takes two and subtracts.
 */
function snapshot() {
  const s = session;
  const ps = s?.ctx.playbackStats;
  return {
    now: performance.now(),
    running: stats.running,
    contextTime: s ? s.ctx.currentTime : 0,
    underrunEvents: ps ? ps.underrunEvents : NaN,
    underrunDuration: ps ? ps.underrunDuration : NaN,
    totalDuration: ps ? ps.totalDuration : NaN,
    rafCount: stats.rafCount,
    blocks: stats.blocks,
    strumsSent: stats.strumsSent,
    strumsReceived: stats.strumsReceived,
    strumsRejected: stats.strumsRejected,
    strumsDropped: stats.strumsDropped,
    ampFramesReceived: stats.ampFramesReceived,
    ampFramesDropped: stats.ampFramesDropped,
    sampleRate: stats.sampleRate,
    error: stats.error,
  };
}

window.demo = { start, stop, strum, strumAll, amplitudes, snapshot, pitch, stats, engine: () => session?.engine ?? null };
// Browsers start an AudioContext only after a user gesture unless autoplay is allowed
// (Chromium: --autoplay-policy=no-user-gesture-required), hence the opt-in.
if (flag("autostart", false)) start(initial).catch(() => {});
