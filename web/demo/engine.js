// The engine demo page: a Downbeat project in the wasm engine (@downbeat/engine), played from
// the computer keyboard and on-screen keys, its live parameters on sliders, its levels drawn
// from the meter ring every animation frame. After start-up, everything between this page and
// the worklet goes through the engine's SharedArrayBuffer rings (no postMessage).
//
// URL query: ?project=keys.toml|/projects/synth.toml&autostart=1
// For the tests: `window.engineDemo` has start(options), stop(), noteOn(note, velocity),
// noteOff(note), setParam(node, param, value), value(node, param), pitch(), levels(), engine()
// (the running DownbeatEngine) and `stats` (also `window.engineDemoStats`).

import { DownbeatEngine } from "/engine/index.js";
import { detectPitch } from "./pitch.js";

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);

/** Computer keys (by `KeyboardEvent.code`, so any layout) to semitones above the octave's C. */
export const KEY_SEMITONES = {
  KeyA: 0, KeyW: 1, KeyS: 2, KeyE: 3, KeyD: 4, KeyF: 5, KeyT: 6, KeyG: 7, KeyY: 8, KeyH: 9,
  KeyU: 10, KeyJ: 11, KeyK: 12, KeyO: 13, KeyL: 14, KeyP: 15, Semicolon: 16,
};
/** On-screen keys: two octaves from C3 (MIDI 48). */
const FIRST_KEY = 48;
const KEY_COUNT = 25;

const stats = {
  running: false,
  error: null,
  project: null,
  sampleRate: 0,
  blockSize: 0,
  channels: 0,
  notesOn: 0,
  notesOff: 0,
  paramsSent: 0,
  refused: 0, // control ring full: the call reported it (never dropped silently)
  underruns: 0,
  peak: [],
  rms: [],
  pitch: 0,
  held: [],
  rafCount: 0,
  params: [], // [{ node, name, min, max, initial }] from the engine's table
};
window.engineDemoStats = stats;

let session = null;
let octave = 4; // the computer keyboard's A key is C4 (MIDI 60)
const held = new Map(); // note -> source ("key:KeyA" / "pointer:1"), so each note is released once

const dbfs = (x) => (x > 0 ? (20 * Math.log10(x)).toFixed(1) : "-inf");
const noteName = (n) => ["C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"][n % 12] + (Math.floor(n / 12) - 1);

function setStatus(text, bad = false) {
  $("status").textContent = text;
  $("status").className = bad ? "bad" : "";
}

/** The `sample_rate = N` of a project text (the AudioContext must run at the project's rate). */
function projectRate(text) {
  const m = /^\s*sample_rate\s*=\s*(\d+)/m.exec(text);
  return m ? Number(m[1]) : 48000;
}

async function start(options = {}) {
  await stop();
  const project = options.project ?? $("project").value;
  $("project").value = project;
  Object.assign(stats, { running: false, error: null, project, notesOn: 0, notesOff: 0, paramsSent: 0, refused: 0, underruns: 0, peak: [], rms: [], pitch: 0 });
  setStatus("starting…");
  const s = { ctx: null, engine: null, analyser: null, sliders: [] };
  session = s;
  try {
    if (!self.crossOriginIsolated) throw new Error("not cross-origin isolated: no SharedArrayBuffer");
    let text = options.text;
    if (text === undefined) {
      const res = await fetch(project);
      if (!res.ok) throw new Error(`${project}: HTTP ${res.status}`);
      text = await res.text();
    }
    const name = project.split("/").pop();
    s.ctx = new AudioContext({ sampleRate: projectRate(text), latencyHint: "interactive" });
    s.engine = await DownbeatEngine.create(s.ctx, text, { name });
    s.engine.node.connect(s.ctx.destination);
    // A tap for the pitch readout (and the tests): Web Audio's analyser on the engine's output.
    s.analyser = new AnalyserNode(s.ctx, { fftSize: 4096 });
    s.engine.node.connect(s.analyser);
    s.timeData = new Float32Array(s.analyser.fftSize);
    await s.ctx.resume();
    const table = s.engine.table;
    stats.sampleRate = s.engine.sampleRate;
    stats.blockSize = s.engine.blockSize;
    stats.channels = s.engine.channels;
    stats.params = table.params.filter((p) => !p.output).map(({ node, name, min, max, initial }) => ({ node, name, min, max, initial }));
    buildSliders(s, stats.params);
    stats.running = true;
    setStatus(`running ${name}: ${stats.params.length} live parameters, ${table.instruments.length} instrument(s), ${stats.sampleRate} Hz, blocks of ${stats.blockSize}`);
    $("stop").disabled = false;
    $("panic").disabled = false;
  } catch (e) {
    stats.error = String(e && e.message ? e.message : e);
    setStatus(`error: ${stats.error}`, true);
    await stop(true);
    throw e;
  }
  return stats;
}

async function stop(keepStatus = false) {
  const s = session;
  session = null;
  stats.running = false;
  held.clear();
  stats.held = [];
  for (const k of document.querySelectorAll(".key.down")) k.classList.remove("down");
  if (!s) return;
  try {
    s.engine?.node.disconnect();
  } catch {}
  if (s.ctx && s.ctx.state !== "closed") await s.ctx.close().catch(() => {});
  if (!keepStatus) setStatus("stopped");
  $("stop").disabled = true;
  $("panic").disabled = true;
  $("params").textContent = "";
}

/** Sends one control call, counting what the ring refused (the engine reports a full ring). */
function send(call) {
  try {
    const ok = call();
    if (ok === false) {
      stats.refused++;
      return false;
    }
    return true;
  } catch (e) {
    if (e && e.name === "ControlRingFull") {
      stats.refused++;
      return false;
    }
    throw e;
  }
}

function noteOn(note, velocity = +$("velocity").value, source = "api") {
  const s = session;
  if (!s || !stats.running || held.has(note)) return false;
  if (!send(() => s.engine.noteOn(note, velocity))) return false;
  held.set(note, source);
  stats.held = [...held.keys()];
  stats.notesOn++;
  keyElement(note)?.classList.add("down");
  return true;
}

function noteOff(note) {
  const s = session;
  if (!s || !held.has(note)) return false;
  held.delete(note);
  stats.held = [...held.keys()];
  keyElement(note)?.classList.remove("down");
  if (!send(() => s.engine.noteOff(note))) return false;
  stats.notesOff++;
  return true;
}

function allNotesOff() {
  const s = session;
  if (!s) return;
  for (const note of [...held.keys()]) keyElement(note)?.classList.remove("down");
  held.clear();
  stats.held = [];
  send(() => s.engine.allNotesOff());
}

function setParam(node, param, value) {
  const s = session;
  if (!s || !stats.running) return false;
  if (!send(() => s.engine.setParam(node, param, value))) return false;
  stats.paramsSent++;
  return true;
}

/** The engine's current value of a parameter, read from the meter ring (no round trip). */
const value = (node, param) => (session ? session.engine.value(node, param) : NaN);

// ---- on-screen keys (pointer events: mouse, pen and touch, several at once) ----

const keyboard = $("keyboard");
const isBlack = (n) => [1, 3, 6, 8, 10].includes(n % 12);
const keyElement = (note) => keyboard.querySelector(`[data-note="${note}"]`);

function buildKeyboard() {
  const whites = [];
  for (let n = FIRST_KEY; n < FIRST_KEY + KEY_COUNT; n++) if (!isBlack(n)) whites.push(n);
  const w = 100 / whites.length;
  for (let n = FIRST_KEY; n < FIRST_KEY + KEY_COUNT; n++) {
    const el = document.createElement("div");
    el.dataset.note = String(n);
    el.className = `key ${isBlack(n) ? "black" : "white"}`;
    if (isBlack(n)) {
      const left = whites.indexOf(n - 1);
      el.style.left = `${(left + 0.68) * w}%`;
      el.style.width = `${w * 0.64}%`;
    } else {
      el.style.left = `${whites.indexOf(n) * w}%`;
      el.style.width = `${w}%`;
      if (n % 12 === 0) el.textContent = noteName(n);
    }
    keyboard.append(el);
  }
  // One note per pointer; sliding across keys plays legato (releases the old, presses the new).
  const pointerNote = new Map();
  const press = (e) => {
    const el = document.elementFromPoint(e.clientX, e.clientY)?.closest?.(".key");
    const note = el ? Number(el.dataset.note) : null;
    const old = pointerNote.get(e.pointerId);
    if (old === note) return;
    if (old !== undefined && old !== null) noteOff(old);
    pointerNote.set(e.pointerId, note);
    if (note !== null) noteOn(note, undefined, `pointer:${e.pointerId}`);
  };
  const release = (e) => {
    const old = pointerNote.get(e.pointerId);
    pointerNote.delete(e.pointerId);
    if (old !== undefined && old !== null) noteOff(old);
  };
  keyboard.addEventListener("pointerdown", (e) => {
    keyboard.setPointerCapture(e.pointerId);
    press(e);
  });
  keyboard.addEventListener("pointermove", (e) => pointerNote.has(e.pointerId) && press(e));
  keyboard.addEventListener("pointerup", release);
  keyboard.addEventListener("pointercancel", release);
}

// ---- computer keyboard ----

function showOctave() {
  $("octave").textContent = `(computer keys: A = ${noteName(12 * (octave + 1))})`;
}

window.addEventListener("keydown", (e) => {
  if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement || e.metaKey || e.ctrlKey || e.altKey) return;
  if (e.code === "KeyZ" || e.code === "KeyX") {
    if (!e.repeat) {
      octave = Math.max(0, Math.min(8, octave + (e.code === "KeyX" ? 1 : -1)));
      showOctave();
    }
    return;
  }
  const semis = KEY_SEMITONES[e.code];
  if (semis === undefined) return;
  e.preventDefault();
  if (e.repeat) return;
  const note = 12 * (octave + 1) + semis;
  if (note <= 127) noteOn(note, undefined, `key:${e.code}`);
});
window.addEventListener("keyup", (e) => {
  // Releases whatever this key started, even if the octave changed since.
  for (const [note, source] of held) if (source === `key:${e.code}`) noteOff(note);
});
window.addEventListener("blur", () => allNotesOff());

// ---- sliders from the engine's parameter table ----

/**
 * Sliders map 0..1000 to the range: logarithmically for wide positive ranges (frequencies, Q),
 * cubically for wide ranges from 0 (times in seconds, semitones), so small values get most of
 * the travel; linearly otherwise.
 */
function scaleFor(p) {
  if (p.min > 0 && p.max / p.min >= 100) {
    return { toValue: (x) => p.min * Math.pow(p.max / p.min, x / 1000), toSlider: (v) => (1000 * Math.log(v / p.min)) / Math.log(p.max / p.min) };
  }
  if (p.min === 0 && p.max >= 10) {
    return { toValue: (x) => p.max * Math.pow(x / 1000, 3), toSlider: (v) => 1000 * Math.cbrt(Math.max(0, v) / p.max) };
  }
  return { toValue: (x) => p.min + ((p.max - p.min) * x) / 1000, toSlider: (v) => (1000 * (v - p.min)) / (p.max - p.min) };
}

const fmt = (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toFixed(3));

function buildSliders(s, params) {
  const box = $("params");
  box.textContent = "";
  let lastNode = null;
  for (const p of params) {
    if (p.node !== lastNode) {
      const h = document.createElement("div");
      h.className = "node";
      h.textContent = p.node;
      box.append(h);
      lastNode = p.node;
    }
    const scale = scaleFor(p);
    const label = document.createElement("label");
    label.textContent = p.name;
    const input = document.createElement("input");
    input.type = "range";
    input.min = "0";
    input.max = "1000";
    input.step = "1";
    input.value = String(Math.round(scale.toSlider(p.initial)));
    input.id = `param-${p.node}-${p.name}`;
    input.dataset.node = p.node;
    input.dataset.param = p.name;
    input.title = `${p.node}.${p.name}: ${p.min} to ${p.max}`;
    label.htmlFor = input.id;
    const out = document.createElement("output");
    out.textContent = fmt(p.initial);
    const back = document.createElement("span");
    back.className = "readback";
    back.textContent = fmt(p.initial);
    input.addEventListener("input", () => {
      // Clamped: the log scale's float error must not step outside the engine's range.
      const v = Math.min(p.max, Math.max(p.min, scale.toValue(+input.value)));
      out.textContent = fmt(v);
      setParam(p.node, p.name, v);
    });
    box.append(label, input, out, back);
    s.sliders.push({ p, back });
  }
}

function pitch() {
  const s = session;
  if (!s) return 0;
  s.analyser.getFloatTimeDomainData(s.timeData);
  return detectPitch(s.timeData, s.ctx.sampleRate);
}

// ---- every animation frame: levels from the meter ring, read-backs, pitch ----

const canvas = $("meters");
const g2d = canvas.getContext("2d");
const history = [];
let uiSince = 0;
let pitchSince = 0;

function levels() {
  const s = session;
  if (!s) return { peak: [], rms: [] };
  const m = s.engine.meters();
  const peak = [];
  const rms = [];
  for (let c = 0; c < s.engine.channels; c++) {
    peak.push(m.peak(c));
    rms.push(m.rms(c));
  }
  return { peak, rms };
}

function drawMeters(peak, rms) {
  const w = canvas.width;
  const h = canvas.height;
  history.push(Math.max(0, ...peak));
  if (history.length > w - 80) history.shift();
  g2d.fillStyle = "#111";
  g2d.fillRect(0, 0, w, h);
  // Scrolling peak history (left), then one bar per channel: peak (light) over RMS (dark), dB scale.
  const y = (x) => Math.round(h * (1 - Math.max(0, Math.min(1, (20 * Math.log10(Math.max(x, 1e-6)) + 60) / 60))));
  g2d.fillStyle = "#396";
  for (let i = 0; i < history.length; i++) {
    const top = y(history[i]);
    g2d.fillRect(i, top, 1, h - top);
  }
  const bw = 70 / Math.max(1, peak.length);
  for (let c = 0; c < peak.length; c++) {
    const x = w - 75 + c * bw;
    g2d.fillStyle = peak[c] >= 1 ? "#f44" : "#6cf";
    g2d.fillRect(x, y(peak[c]), bw - 3, h - y(peak[c]));
    g2d.fillStyle = "#369";
    g2d.fillRect(x, y(rms[c]), bw - 3, h - y(rms[c]));
  }
}

function frame(now) {
  stats.rafCount++;
  const s = session;
  if (s && stats.running) {
    const { peak, rms } = levels();
    stats.peak = peak;
    stats.rms = rms;
    drawMeters(peak, rms);
    if (s.ctx.playbackStats) stats.underruns = s.ctx.playbackStats.underrunEvents;
    if (now - pitchSince > 100) {
      pitchSince = now;
      stats.pitch = held.size ? pitch() : 0;
    }
    if (now - uiSince > 100) {
      uiSince = now;
      for (const { p, back } of s.sliders) back.textContent = fmt(s.engine.value(p.node, p.name));
      $("s-peak").textContent = peak.map(dbfs).join(" / ");
      $("s-rms").textContent = rms.map(dbfs).join(" / ");
      $("s-pitch").textContent = stats.pitch ? `${stats.pitch.toFixed(1)} (${noteName(Math.round(69 + 12 * Math.log2(stats.pitch / 440)))})` : "–";
      $("s-notes").textContent = `${stats.notesOn} / ${stats.notesOff}`;
      $("s-params").textContent = String(stats.paramsSent);
      $("s-refused").textContent = String(stats.refused);
      $("s-underruns").textContent = String(stats.underruns);
      $("s-format").textContent = `${stats.sampleRate} / ${stats.blockSize}`;
    }
  }
  requestAnimationFrame(frame);
}

buildKeyboard();
showOctave();
$("velocity").oninput = () => ($("velocity-out").textContent = $("velocity").value);
$("start").onclick = () => start().catch(() => {});
$("stop").onclick = () => stop();
$("panic").onclick = () => allNotesOff();
$("project").onchange = () => session && start().catch(() => {});
if (query.has("project")) $("project").value = query.get("project");
requestAnimationFrame(frame);

window.engineDemo = { start, stop, noteOn, noteOff, allNotesOff, setParam, value, pitch, levels, stats, engine: () => session?.engine ?? null };
if (query.get("autostart") === "1") start().catch(() => {});
