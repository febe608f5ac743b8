// Producer half of stress.test.mjs: pushes the test sequence into a ring in chunks of random
// size, by random method, spinning (never sleeping) when the ring is full.
import { parentPort, workerData } from "node:worker_threads";
import { ParameterWriter, RingBuffer } from "@downbeat/ringbuf";
import { Prng, SequenceWriter, seq } from "./util.mjs";

const { sab, type, total, seed, maxChunk } = workerData;
const rng = new Prng(seed);

if (type === "params") {
  const writer = new ParameterWriter(new RingBuffer(sab, Uint32Array));
  for (let i = 0; i < total; ) {
    if (writer.enqueueChange(i, seq(i) / 8, i % 4096)) i++;
  }
} else {
  const Type = globalThis[type];
  const ring = new RingBuffer(sab, Type);
  const gen = new SequenceWriter();
  const chunk = new Type(maxChunk);
  let sent = 0;
  let pending = 0; // generated but not yet accepted: stays at the front of `chunk`
  while (sent < total) {
    const want = Math.min(1 + rng.int(maxChunk - 1), total - sent);
    if (rng.next() < 0.5) {
      if (pending < want) {
        gen.fill(chunk, want - pending, pending);
        pending = want;
      }
      const n = ring.push(chunk, want);
      chunk.copyWithin(0, n, pending);
      pending -= n;
      sent += n;
    } else if (pending === 0) {
      sent += ring.writeCallbackWithOffset(want, (s, o1, n1, o2, n2) => {
        gen.fill(s, n1, o1);
        gen.fill(s, n2, o2);
      });
    }
  }
}
parentPort.postMessage("done");
