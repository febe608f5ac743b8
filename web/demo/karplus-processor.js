// AudioWorklet side of the Karplus-Strong demo: N plucked strings in plain JavaScript.
//
// Control in, amplitudes out, over one of two transports chosen by the page:
//
// * "ring": strums arrive through a ParamQueue ring (id = string index, value = strength), read
//   with ParameterReader; each block's per-string amplitudes go out through a Float32 ring whose
//   record is one whole frame (HEADER + N floats), written in place with writeCallbackWithOffset.
//   process() allocates nothing in this mode: every array is made in the constructor.
// * "postmessage": strums arrive as port messages; each block's frame is posted with
//   port.postMessage (a structured clone per block, as in karplus-stress-tester).
//
// Frame layout (both modes): [block, strumsReceived, framesDropped, strings, portMessages,
// amp0 .. ampN-1], where portMessages counts control messages the worklet got on its port (0 in
// ring mode: the tests check that the ring, not the port, carried the traffic).

import { ParameterReader, RingBuffer } from "/ringbuf/index.js";

export const HEADER = 5;

/** Decay per sample pair: the loop filter is y = G * (x[n] + x[n+1]). */
const G = 0.4985;

class KarplusProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const o = options.processorOptions;
    this.mode = o.mode;
    const n = (this.n = o.strings | 0);

    // Delay lines, one Float32Array for all strings: string i is tuned to a semitone in a
    // three-octave range from A2, so lengths run from about 400 down to 50 samples.
    this.off = new Int32Array(n);
    this.len = new Int32Array(n);
    this.pos = new Int32Array(n);
    let total = 0;
    for (let i = 0; i < n; i++) {
      const f = 110 * Math.pow(2, (i % 36) / 12);
      const l = Math.max(2, Math.round(sampleRate / f));
      this.off[i] = total;
      this.len[i] = l;
      total += l;
    }
    this.lines = new Float32Array(total);
    this.frameLen = HEADER + n;
    this.frame = new Float32Array(this.frameLen);
    this.amps = this.frame.subarray(HEADER); // a view made once: amplitudes land in the frame
    this.mix = new Float32Array(128);
    this.gain = 0.25 / Math.sqrt(Math.max(1, n));
    this.seed = 0x9e3779b9 | 0;

    this.block = 0;
    this.strumsReceived = 0;
    this.framesDropped = 0;
    this.portMessages = 0; // port messages other than "stop"
    this.stopped = false;

    if (this.mode === "ring") {
      this.params = new ParameterReader(new RingBuffer(o.paramSab, Uint32Array));
      this.change = { index: 0, value: 0, frame: 0 };
      this.ampRing = new RingBuffer(o.ampSab, Float32Array);
      if (this.ampRing.recordLength() !== this.frameLen) {
        throw new Error(`amplitude ring record length ${this.ampRing.recordLength()} != ${this.frameLen}`);
      }
      // Bound once (no closure per block): copies the frame into the ring's storage, across the
      // wrap if need be. The ring's record is one frame, so it offers all of it or nothing.
      this.writeFrame = (s, o1, n1, o2, n2) => {
        const f = this.frame;
        for (let k = 0; k < n1; k++) s[o1 + k] = f[k];
        for (let k = 0; k < n2; k++) s[o2 + k] = f[n1 + k];
        return n1 + n2;
      };
    }

    this.port.onmessage = (e) => {
      const m = e.data;
      if (m.type === "stop") {
        this.stopped = true;
        return;
      }
      this.portMessages++;
      if (m.type === "strum" && this.mode === "postmessage") {
        const d = m.data; // Float32Array of [index, strength] pairs
        for (let k = 0; k + 1 < d.length; k += 2) {
          this.strum(d[k], d[k + 1]);
          this.strumsReceived++;
        }
      }
    };
    this.port.postMessage({ type: "ready", mode: this.mode, strings: n, sampleRate, delaySamples: total });
  }

  /** Fills string `i`'s delay line with noise of amplitude `strength` (xorshift32, no garbage). */
  strum(i, strength) {
    i = i | 0;
    if (i < 0 || i >= this.n) return;
    const base = this.off[i];
    const end = base + this.len[i];
    const lines = this.lines;
    let x = this.seed;
    for (let k = base; k < end; k++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      lines[k] = strength * ((x >>> 8) / 8388608 - 1);
    }
    this.seed = x;
  }

  process(inputs, outputs) {
    if (this.stopped) return false;
    if (this.mode === "ring") {
      const c = this.change;
      while (this.params.dequeueChange(c)) {
        this.strum(c.index, c.value);
        this.strumsReceived++;
      }
    }

    const out = outputs[0];
    const frames = out[0].length;
    const mix = this.mix;
    mix.fill(0);
    const lines = this.lines;
    const off = this.off;
    const len = this.len;
    const pos = this.pos;
    const amps = this.amps;
    for (let s = 0, n = this.n; s < n; s++) {
      const base = off[s];
      const l = len[s];
      let p = pos[s];
      let prev = lines[base + p];
      let amp = 0;
      for (let k = 0; k < frames; k++) {
        let q = p + 1;
        if (q === l) q = 0;
        const next = lines[base + q];
        const y = G * (prev + next);
        lines[base + p] = y;
        mix[k] += y;
        const a = y < 0 ? -y : y;
        if (a > amp) amp = a;
        prev = next;
        p = q;
      }
      pos[s] = p;
      amps[s] = amp;
    }
    const g = this.gain;
    for (let c = 0; c < out.length; c++) {
      const ch = out[c];
      for (let k = 0; k < frames; k++) ch[k] = g * mix[k];
    }

    this.block++;
    const f = this.frame;
    f[0] = this.block;
    f[1] = this.strumsReceived;
    f[2] = this.framesDropped;
    f[3] = this.n;
    f[4] = this.portMessages;
    if (this.mode === "ring") {
      if (this.ampRing.writeCallbackWithOffset(this.frameLen, this.writeFrame) === 0) this.framesDropped++;
    } else {
      this.port.postMessage(f); // structured clone: a copy and garbage on both sides, per block
    }
    return true;
  }
}

registerProcessor("karplus", KarplusProcessor);
