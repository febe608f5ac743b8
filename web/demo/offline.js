// The offline check: Worker -> ring -> AudioWorklet in an OfflineAudioContext -> compare.
// The result is on `window.offlineResult` (and `window.offlineDone`, a promise of it).

import { RingBuffer } from "/ringbuf/index.js";
import { expected } from "./offline-sequence.js";

const query = new URLSearchParams(location.search);
const num = (name, dflt) => (query.has(name) ? Number(query.get(name)) : dflt);

export async function runOffline({
  seconds = num("seconds", 10),
  rate = num("rate", 48000),
  capacity = num("capacity", 4096),
  seed = num("seed", 12345),
  spinLimit = num("spinLimit", 5e7),
} = {}) {
  if (!self.crossOriginIsolated) throw new Error("not cross-origin isolated: no SharedArrayBuffer");
  const frames = Math.round(seconds * rate);
  const sab = RingBuffer.getStorageForCapacity(capacity, Float32Array);
  const statsSab = new SharedArrayBuffer(5 * 4);
  const stats = new Int32Array(statsSab);

  const ctx = new OfflineAudioContext({ numberOfChannels: 1, length: frames, sampleRate: rate });
  await ctx.audioWorklet.addModule("offline-processor.js");
  const node = new AudioWorkletNode(ctx, "ring-player", {
    numberOfInputs: 0,
    numberOfOutputs: 1,
    outputChannelCount: [1],
    processorOptions: { sab, statsSab, frames, spinLimit },
  });
  node.connect(ctx.destination);
  let processorError = null;
  node.onprocessorerror = (e) => (processorError = String(e.message ?? e));

  const worker = new Worker("offline-worker.js", { type: "module" });
  const workerDone = new Promise((ok, fail) => {
    worker.onerror = (e) => fail(new Error(`worker: ${e.message}`));
    worker.onmessage = (e) => {
      if (e.data.type === "done") ok(e.data);
      else if (e.data.type === "error") fail(new Error(`worker: ${e.data.message}`));
    };
  });
  const started = new Promise((ok) => worker.addEventListener("message", (e) => e.data.type === "started" && ok()));
  worker.postMessage({ sab, frames, seed });
  await started;

  const t0 = performance.now();
  const buffer = await ctx.startRendering();
  const renderMs = performance.now() - t0;
  const producer = await Promise.race([
    workerDone,
    new Promise((_, fail) => setTimeout(() => fail(new Error("worker did not finish")), 10000)),
  ]).finally(() => worker.terminate());

  const got = buffer.getChannelData(0);
  const want = expected(seed, frames);
  let mismatches = 0;
  let firstMismatch = -1;
  for (let i = 0; i < frames; i++) {
    if (!Object.is(got[i], want[i])) {
      if (firstMismatch < 0) firstMismatch = i;
      mismatches++;
    }
  }
  return {
    frames: got.length,
    expectedFrames: frames,
    mismatches,
    firstMismatch,
    firstMismatchValues: firstMismatch < 0 ? null : { got: got[firstMismatch], expected: want[firstMismatch] },
    underruns: stats[1],
    renderMs,
    blocks: stats[0],
    longestSpin: stats[2],
    emptyPolls: stats[3],
    consumed: stats[4],
    capacity,
    wraps: Math.floor(frames / capacity),
    sampleRate: rate,
    seed,
    producer,
    processorError,
  };
}

async function run() {
  const out = document.getElementById("out");
  const verdict = document.getElementById("verdict");
  verdict.textContent = "running…";
  verdict.className = "";
  let result;
  try {
    result = await runOffline();
    const ok = result.mismatches === 0 && result.underruns === 0 && result.frames === result.expectedFrames;
    verdict.textContent = ok
      ? `sample-exact: ${result.frames} frames in ${result.renderMs.toFixed(1)} ms`
      : `MISMATCH: ${result.mismatches} samples differ, ${result.underruns} underruns`;
    verdict.className = ok ? "ok" : "bad";
  } catch (e) {
    result = { error: String(e && e.message ? e.message : e) };
    verdict.textContent = `error: ${result.error}`;
    verdict.className = "bad";
  }
  out.textContent = JSON.stringify(result, null, 2);
  window.offlineResult = result;
  return result;
}

document.getElementById("run").onclick = () => (window.offlineDone = run());
window.runOffline = runOffline;
window.offlineDone = run();
