// One side of a web-ring benchmark case, run in a worker_threads Worker. The same loop body
// runs against either library: only the import differs, as for a user switching.
import { parentPort, workerData } from "node:worker_threads";

const { impl, role, kase, sab, sab2, control, count, chunk } = workerData;
const lib = await import(impl === "downbeat" ? "@downbeat/ringbuf" : "ringbuf.js");
const ring = new lib.RingBuffer(sab, Float32Array);
const back = sab2 ? new lib.RingBuffer(sab2, Float32Array) : null;
const go = new Int32Array(control);

parentPort.postMessage({ ready: true });
Atomics.wait(go, 0, 0); // the main thread releases both sides at once

const buf = new Float32Array(chunk);
const t0 = performance.now();
let check = 0;

if (kase === "roundtrip") {
  // Ping-pong over two rings: the "ping" side times each trip.
  const times = role === "ping" ? new Float64Array(count) : null;
  for (let i = 0; i < count; i++) {
    if (role === "ping") {
      buf[0] = i;
      const start = performance.now();
      while (ring.push(buf, 1) === 0);
      while (back.pop(buf, 1) === 0);
      times[i] = performance.now() - start;
      check += buf[0];
    } else {
      while (ring.pop(buf, 1) === 0);
      while (back.push(buf, 1) === 0);
    }
  }
  parentPort.postMessage({ ms: performance.now() - t0, check, times });
} else if (role === "producer") {
  for (let sent = 0; sent < count; ) {
    for (let i = 0; i < chunk; i++) buf[i] = (sent + i) & 0xffff;
    let done = 0;
    while (done < chunk) done += ring.push(buf, chunk - done, done);
    sent += chunk;
  }
  parentPort.postMessage({ ms: performance.now() - t0 });
} else {
  for (let got = 0; got < count; ) {
    const n = ring.pop(buf, chunk);
    for (let i = 0; i < n; i++) check += buf[i];
    got += n;
  }
  parentPort.postMessage({ ms: performance.now() - t0, check });
}
