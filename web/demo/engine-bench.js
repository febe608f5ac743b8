// The engine's benchmark page (web/bench/browser.mjs loads it): N sines in the wasm engine, N
// native OscillatorNodes, or N held synth voices in the wasm engine, playing live; and an
// offline render of a project through an OfflineAudioContext.
//
// URL query: ?kind=sines-wasm|sines-native|synth&count=N&autostart=1
// `window.bench` has start(options), stop(), snapshot() (cumulative counters, as the stress
// page's) and offline({ project, midi, seconds, name }).

import { DownbeatEngine, renderOffline } from "/engine/index.js";
import { sineFreq, sineProject, synthProject, voiceChannel, voiceNote, voiceSynth } from "./projects.js";

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);
const KINDS = ["sines-wasm", "sines-native", "synth"];
/** The live cases' sample rate: the generated projects' rate, so the context matches them. */
const RATE = 48000;

const stats = {
  kind: null,
  count: 0,
  running: false,
  error: null,
  sampleRate: 0,
  underrunEvents: 0,
  eventsSent: 0,
  eventsRefused: 0,
  eventsPending: 0,
  peak: 0,
  rafCount: 0,
  fps: 0,
};
window.benchStats = stats;
let session = null;

/**
 * Events sent per animation frame at most: the worklet hands everything in the control ring to
 * the engine before its next block, and the engine holds 4096 pending events (more are refused,
 * and counted); a frame lasts several blocks.
 */
const EVENTS_PER_FRAME = 1024;

/** Sends queued events, up to a frame's worth; what the control ring refuses stays queued for the next frame. */
function pump(s) {
  for (let budget = EVENTS_PER_FRAME; s.queue.length && budget > 0; budget--) {
    const send = s.queue[s.queue.length - 1];
    let ok;
    try {
      ok = send() !== false;
    } catch (e) {
      if (e && e.name === "ControlRingFull") ok = false;
      else throw e;
    }
    if (!ok) {
      stats.eventsRefused++;
      break;
    }
    s.queue.pop();
    stats.eventsSent++;
  }
  stats.eventsPending = s.queue.length;
}

async function start(options = {}) {
  await stop();
  const kind = options.kind ?? $("kind").value;
  const count = Math.max(1, options.count ?? (+$("count").value | 0));
  if (!KINDS.includes(kind)) throw new Error(`unknown kind ${kind}; expected ${KINDS.join(", ")}`);
  $("kind").value = kind;
  $("count").value = String(count);
  Object.assign(stats, { kind, count, running: false, error: null, underrunEvents: 0, eventsSent: 0, eventsRefused: 0, eventsPending: 0, peak: 0 });
  const s = { kind, count, ctx: null, engine: null, nodes: [], queue: [], analyser: null };
  session = s;
  $("status").textContent = "starting…";
  try {
    if (!self.crossOriginIsolated) throw new Error("not cross-origin isolated: no SharedArrayBuffer");
    const ctx = (s.ctx = new AudioContext({ sampleRate: RATE, latencyHint: "interactive" }));
    if (kind === "sines-native") {
      // The same sum as the wasm project: N oscillators at 0.5 / N into one gain.
      const gain = new GainNode(ctx, { gain: 0.5 / count });
      for (let i = 0; i < count; i++) {
        const osc = new OscillatorNode(ctx, { type: "sine", frequency: sineFreq(i, count) });
        osc.connect(gain);
        osc.start();
        s.nodes.push(osc);
      }
      s.analyser = new AnalyserNode(ctx, { fftSize: 1024 });
      s.data = new Float32Array(s.analyser.fftSize);
      gain.connect(s.analyser);
      gain.connect(ctx.destination);
      s.nodes.push(gain);
    } else {
      const text = kind === "synth" ? synthProject(count, { sampleRate: RATE }) : sineProject(count, { sampleRate: RATE });
      // Room for every held note at once (the synth case sends them all at start).
      s.engine = await DownbeatEngine.create(ctx, text, { name: `${kind}-${count}.toml`, controlCapacity: Math.max(1024, count) });
      s.engine.node.connect(ctx.destination);
      if (kind === "synth") {
        // Every voice held: one note on each, queued so a full ring only delays them.
        for (let k = count - 1; k >= 0; k--) {
          s.queue.push(() => s.engine.noteOn(voiceNote(k), 0.75, { channel: voiceChannel(k), instrument: voiceSynth(k) }));
        }
      }
    }
    await ctx.resume();
    pump(s);
    stats.sampleRate = ctx.sampleRate;
    stats.running = true;
    $("status").textContent = `running ${kind} × ${count}`;
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
  stats.running = false;
  if (!s) return;
  if (s.ctx && s.ctx.state !== "closed") await s.ctx.close().catch(() => {});
  $("status").textContent = "stopped";
}

function peakNow(s) {
  if (s.engine) {
    const m = s.engine.meters();
    let p = 0;
    for (let c = 0; c < s.engine.channels; c++) p = Math.max(p, m.peak(c));
    return p;
  }
  s.analyser.getFloatTimeDomainData(s.data);
  let m = 0;
  for (const x of s.data) if (Math.abs(x) > m) m = Math.abs(x);
  return m;
}

let fpsFrames = 0;
let fpsSince = performance.now();
function frame(now) {
  stats.rafCount++;
  fpsFrames++;
  if (now - fpsSince >= 1000) {
    stats.fps = (1000 * fpsFrames) / (now - fpsSince);
    fpsFrames = 0;
    fpsSince = now;
    $("s-fps").textContent = stats.fps.toFixed(1);
  }
  const s = session;
  if (s && stats.running) {
    pump(s);
    stats.peak = peakNow(s);
    const ps = s.ctx.playbackStats;
    if (ps) stats.underrunEvents = ps.underrunEvents;
    $("s-underrunEvents").textContent = String(stats.underrunEvents);
    $("s-underrunEvents").className = stats.underrunEvents ? "bad" : "";
    $("s-peak").textContent = stats.peak.toFixed(3);
    $("s-events").textContent = `${stats.eventsSent} / ${stats.eventsRefused}`;
  }
  requestAnimationFrame(frame);
}
requestAnimationFrame(frame);

/** Cumulative counters read now, as the stress page's snapshot(): the benchmark subtracts two. */
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
    eventsSent: stats.eventsSent,
    eventsPending: stats.eventsPending,
    peak: stats.peak,
    // Events the engine refused (its event list full, or an error): a held voice missing.
    engineRefused: s?.engine ? s.engine.meters().dropped + s.engine.meters().eventErrors : 0,
    sampleRate: stats.sampleRate,
    error: stats.error,
  };
}

/**
 * Renders a project through an OfflineAudioContext and the wasm engine (the package's
 * `renderOffline`, which `npm run render` uses): `project` and `midi` are URLs (e.g.
 * /projects/synth.toml, /projects/tune.mid); the length is `seconds`, else the MIDI file's.
 * Returns the frames and the milliseconds from the project text to the rendered samples
 * (loading, building and rendering: what `downbeat run` does natively).
 */
async function offline({ project, midi, seconds, name }) {
  const text = await (await fetch(project)).text();
  const midiBytes = midi ? new Uint8Array(await (await fetch(midi)).arrayBuffer()) : undefined;
  const t0 = performance.now();
  const r = await renderOffline(text, { name: name ?? project.split("/").pop(), midi: midiBytes, seconds });
  const totalMs = performance.now() - t0;
  let peak = 0;
  for (const ch of r.channels) for (const x of ch) if (Math.abs(x) > peak) peak = Math.abs(x);
  return { frames: r.frames, sampleRate: r.sampleRate, totalMs, peak };
}

$("start").onclick = () => start().catch(() => {});
$("stop").onclick = () => stop();
window.bench = { start, stop, snapshot, offline, stats };
if (query.get("autostart") === "1") {
  start({ kind: query.get("kind") ?? "sines-wasm", count: Math.max(1, parseInt(query.get("count") ?? "256", 10) || 256) }).catch(() => {});
}
