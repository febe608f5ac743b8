// A worker of the interop tests. It may host the wasm module (one instance, on the shared memory
// it is sent) and it runs "tasks": sending or checking a sequence through a ring, on the Rust
// side (through the module's exports) or the JavaScript side (@downbeat/ringbuf). All the tasks
// of one `run` message are interleaved in one loop, so one worker can drive both directions.
//
// Messages (each answered with { id, result } or { id, error }):
//   { op: "init", memory, module? }      attach the memory; instantiate the module if given
//   { op: "call", name, args }           call a wasm export
//   { op: "run", tasks }                 run tasks to completion, answer per-task stats
// A task: { side: "wasm" | "js", kind: "f32" | "param" | "audio", role: "produce" | "consume",
//           count, start = 0, handle (wasm) | byteOffset (js), maxBatch = 300 }
// Audio tasks count frames and add { channels, via }: how the side moves them.
//   wasm: via "interleaved" (produce_audio / consume_audio) or "planar" (the *_planar exports)
//   js:   produce always goes through AudioWriter.enqueuePlanar from planar blocks of BLOCK
//         frames; consume via "planar" (dequeuePlanar), "interleaved" (dequeue) or "alternate"
import { parentPort } from "node:worker_threads";
import { AudioReader, AudioWriter, ParameterReader, ParameterWriter, RingBuffer } from "@downbeat/ringbuf";
import { audio, f32Bits, hex, param, sample } from "./pattern.mjs";

/** Give up when no task has moved for this long: a lost element would otherwise hang the test. */
const STALL_MS = 10_000;
/** Idle rounds spent spinning before sleeping a little (2 cores, up to 3 busy threads). */
const SPINS = 200;
/** Frames of the planar blocks the JavaScript audio producer sends, as an AudioWorklet would. */
const BLOCK = 128;

let memory = null;
let wasm = null;
const sleepCell = new Int32Array(new SharedArrayBuffer(4));

parentPort.on("message", (msg) => {
  try {
    parentPort.postMessage({ id: msg.id, result: handle(msg) });
  } catch (e) {
    parentPort.postMessage({ id: msg.id, error: e instanceof Error ? e.message : String(e) });
  }
});

function handle(msg) {
  switch (msg.op) {
    case "init":
      memory = msg.memory;
      if (msg.module) {
        wasm = new WebAssembly.Instance(msg.module, { env: { memory } }).exports;
      }
      return true;
    case "call":
      return wasm[msg.name](...msg.args);
    case "run":
      return run(msg.tasks);
    default:
      throw new Error(`unknown op ${msg.op}`);
  }
}

function run(tasks) {
  const steppers = tasks.map(stepper);
  const t0 = performance.now();
  let idle = 0;
  let idleSince = 0;
  let pending = steppers.length;
  while (pending > 0) {
    let moved = 0;
    pending = 0;
    for (const s of steppers) {
      if (s.done < s.task.count) {
        moved += s.step();
        if (s.done < s.task.count) pending++;
      }
    }
    if (moved > 0) {
      idle = 0;
    } else if (++idle > SPINS) {
      const now = Date.now();
      if (idle === SPINS + 1) {
        idleSince = now;
      } else if (now - idleSince > STALL_MS) {
        throw new Error(
          "stalled: " + steppers.map((s) => `${describe(s.task)} at ${s.done}/${s.task.count}`).join("; "),
        );
      }
      Atomics.wait(sleepCell, 0, 0, 0.02);
    }
  }
  const ms = performance.now() - t0;
  return steppers.map((s) => ({ done: s.done, leftover: s.leftover(), ms }));
}

function describe(t) {
  return `${t.side} ${t.kind} ${t.role}`;
}

/** The message for sample `channel` of frame `frame` being `found` instead of the sequence's. */
function audioMismatch(where, frame, channel, found) {
  const expected = audio(frame, channel);
  return new Error(
    `${where}: frame ${frame} channel ${channel}: expected ${expected} (${f32Bits(expected)}), ` +
      `found ${found} (${f32Bits(found)})`,
  );
}

/** Batch sizes vary (deterministically) so that pushes and pops split and wrap everywhere. */
function batches(max) {
  let k = 0;
  return () => 1 + ((k++ * 7919) % max);
}

function stepper(task) {
  const start = task.start ?? 0;
  const batch = batches(task.maxBatch ?? 300);
  const s = { task, done: 0, step: null, leftover: () => 0 };
  const left = () => task.count - s.done;
  const where = () => describe(task);

  if (task.side === "wasm") {
    const h = task.handle;
    const check = (n) => {
      if (n === -1) {
        const [index, expected, found, word] = [0, 1, 2, 3].map((f) => wasm.mismatch_field(h, f) >>> 0);
        throw new Error(
          task.kind === "f32"
            ? `${where()}: element ${index}: expected bits ${hex(expected)}, found ${hex(found)}`
            : task.kind === "audio"
              ? `${where()}: frame ${index} channel ${word}: expected bits ${hex(expected)}, found ${hex(found)}`
              : `${where()}: record ${index} word ${word}: expected ${hex(expected)}, found ${hex(found)}`,
        );
      }
      if (n < 0) throw new Error(`${where()}: error code ${n}`);
      s.done += n;
      return n;
    };
    const name = { f32: "f32", param: "params", audio: "audio" }[task.kind];
    const fn = wasm[`${task.role}_${name}${task.via === "planar" ? "_planar" : ""}`];
    if (!fn) throw new Error(`${where()}: no export for via ${task.via}`);
    s.step = () => check(fn(h, start + s.done, Math.min(batch(), left())));
    if (task.role === "consume") s.leftover = () => wasm.available(h);
    return s;
  }

  if (task.kind === "audio") return audioStepper(s, batch, start);

  if (task.kind === "f32") {
    const ring = new RingBuffer(memory.buffer, Float32Array, task.byteOffset);
    const buf = new Float32Array(task.maxBatch ?? 300);
    if (task.role === "produce") {
      let filled = 0; // buf[0 .. filled] holds elements done .. done + filled, not yet pushed
      s.step = () => {
        const want = Math.min(batch(), left());
        for (; filled < want; filled++) buf[filled] = sample(start + s.done + filled);
        const n = ring.push(buf, want);
        buf.copyWithin(0, n, filled);
        filled -= n;
        s.done += n;
        return n;
      };
    } else {
      s.step = () => {
        const n = ring.pop(buf, Math.min(batch(), left()));
        for (let k = 0; k < n; k++) {
          const i = start + s.done + k;
          if (!Object.is(buf[k], sample(i))) {
            throw new Error(
              `${where()}: element ${i}: expected ${sample(i)} (${f32Bits(sample(i))}), ` +
                `found ${buf[k]} (${f32Bits(buf[k])})`,
            );
          }
        }
        s.done += n;
        return n;
      };
      s.leftover = () => ring.availableRead();
    }
    return s;
  }

  const ring = new RingBuffer(memory.buffer, Uint32Array, task.byteOffset);
  if (task.role === "produce") {
    const writer = new ParameterWriter(ring);
    s.step = () => {
      const want = Math.min(batch(), left());
      let n = 0;
      for (; n < want; n++) {
        const p = param(start + s.done);
        if (!writer.enqueueChange(p.index, p.value, p.frame)) break;
        s.done++;
      }
      return n;
    };
  } else {
    const reader = new ParameterReader(ring);
    const got = { index: 0, value: 0, frame: 0 };
    s.step = () => {
      const want = Math.min(batch(), left());
      let n = 0;
      for (; n < want && reader.dequeueChange(got); n++) {
        const i = start + s.done;
        const p = param(i);
        for (const field of ["index", "value", "frame"]) {
          if (!Object.is(got[field], p[field])) {
            throw new Error(
              `${where()}: record ${i} ${field}: expected ${p[field]}, found ${got[field]} ` +
                `(record ${JSON.stringify(got)})`,
            );
          }
        }
        s.done++;
      }
      return n;
    };
    s.leftover = () => ring.availableRead() / 3;
  }
  return s;
}

/** The JavaScript side of an audio task: AudioWriter / AudioReader on the ring. */
function audioStepper(s, batch, start) {
  const { task } = s;
  const ch = task.channels;
  const where = describe(task);
  const left = () => task.count - s.done;
  const ring = new RingBuffer(memory.buffer, Float32Array, task.byteOffset);
  if (ring.recordLength() !== ch) {
    throw new Error(`${where}: ring has record length ${ring.recordLength()}, not ${ch}`);
  }
  const whole = (frames, what) => {
    if (!Number.isInteger(frames)) throw new Error(`${where}: ${what} moved part of a frame: ${frames}`);
    return frames;
  };

  if (task.role === "produce") {
    const writer = new AudioWriter(ring);
    // One planar block of BLOCK frames (frames blockStart ..), and views of it from each offset
    // on, made once: enqueuePlanar always takes frames from the start of the channels it gets.
    const block = Array.from({ length: ch }, () => new Float32Array(BLOCK));
    const views = Array.from({ length: BLOCK }, (_, o) => block.map((c) => c.subarray(o)));
    let blockStart = -BLOCK;
    s.step = () => {
      const offset = s.done - blockStart;
      if (offset >= BLOCK) {
        blockStart = s.done;
        for (let c = 0; c < ch; c++) {
          const channel = block[c];
          for (let f = 0; f < BLOCK; f++) channel[f] = audio(start + blockStart + f, c);
        }
        return step(0);
      }
      return step(offset);
    };
    const step = (offset) => {
      const want = Math.min(batch(), left(), BLOCK - offset);
      const n = whole(writer.enqueuePlanar(views[offset], want), "enqueuePlanar");
      if (n > want) throw new Error(`${where}: enqueuePlanar took ${n} frames of ${want}`);
      s.done += n;
      return n;
    };
    return s;
  }

  const reader = new AudioReader(ring);
  const max = task.maxBatch ?? 300;
  const planar = Array.from({ length: ch }, () => new Float32Array(max));
  const interleaved = new Float32Array(max * ch);
  // dequeue(buf) fills as much of buf as it can: one view per batch length, made once.
  const prefixes = Array.from({ length: max + 1 }, (_, n) => interleaved.subarray(0, n * ch));
  let k = 0;
  s.step = () => {
    const want = Math.min(batch(), left());
    const via = task.via === "alternate" ? (k++ % 2 ? "planar" : "interleaved") : task.via;
    const first = start + s.done;
    let n;
    if (via === "planar") {
      n = whole(reader.dequeuePlanar(planar, want), "dequeuePlanar");
      for (let f = 0; f < n; f++) {
        for (let c = 0; c < ch; c++) {
          const x = planar[c][f];
          if (!Object.is(x, audio(first + f, c))) throw audioMismatch(where, first + f, c, x);
        }
      }
    } else if (via === "interleaved") {
      n = whole(reader.dequeue(prefixes[want]) / ch, "dequeue");
      for (let f = 0, j = 0; f < n; f++) {
        for (let c = 0; c < ch; c++, j++) {
          const x = interleaved[j];
          if (!Object.is(x, audio(first + f, c))) throw audioMismatch(where, first + f, c, x);
        }
      }
    } else {
      throw new Error(`${where}: unknown via ${task.via}`);
    }
    if (n > want) throw new Error(`${where}: read ${n} frames of ${want}`);
    s.done += n;
    return n;
  };
  s.leftover = () => ring.availableRead() / ch;
  return s;
}
