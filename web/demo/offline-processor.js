// Consumer of the offline check: each process() pops its 128 frames from the ring that the Worker
// fills. In an offline render nothing waits for the clock, so when the ring is momentarily empty
// it spins (reloading the write index) up to a bound, past which it counts an underrun and
// outputs silence for the rest of the block; after a first underrun the render is failed anyway,
// so later blocks spin a thousand times less (a broken ring must not hang the render for hours).
// No allocation in process().

import { RingBuffer } from "/ringbuf/index.js";

class RingPlayer extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const o = options.processorOptions;
    this.ring = new RingBuffer(o.sab, Float32Array);
    // [blocks, underruns, longest spin, empty polls, frames consumed]
    this.stats = new Int32Array(o.statsSab);
    this.frames = o.frames;
    this.spinLimit = o.spinLimit;
    this.consumed = 0;
    this.out = null;
    this.filled = 0;
    this.copy = (s, o1, n1, o2, n2) => {
      const out = this.out;
      let f = this.filled;
      for (let k = 0; k < n1; k++) out[f++] = s[o1 + k];
      for (let k = 0; k < n2; k++) out[f++] = s[o2 + k];
      this.filled = f;
      return n1 + n2;
    };
  }

  process(inputs, outputs) {
    const out = outputs[0][0];
    const want = Math.min(out.length, this.frames - this.consumed);
    this.out = out;
    this.filled = 0;
    let spins = 0;
    while (this.filled < want) {
      if (this.ring.readCallbackWithOffset(want - this.filled, this.copy) === 0) {
        if (++spins > this.spinLimit) {
          Atomics.add(this.stats, 1, 1);
          this.spinLimit = Math.ceil(this.spinLimit / 1000);
          break;
        }
      }
    }
    this.consumed += this.filled;
    out.fill(0, this.filled);
    for (let c = 1; c < outputs[0].length; c++) outputs[0][c].set(out);
    const st = this.stats;
    Atomics.add(st, 0, 1);
    if (spins > st[2]) Atomics.store(st, 2, spins);
    Atomics.add(st, 3, spins);
    Atomics.store(st, 4, this.consumed);
    this.out = null;
    return true;
  }
}

registerProcessor("ring-player", RingPlayer);
