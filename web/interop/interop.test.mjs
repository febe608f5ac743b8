// Rust (downbeat-ring compiled to wasm32, over a shared WebAssembly.Memory) and JavaScript
// (@downbeat/ringbuf) reading and writing the same rings, from two worker threads at once.
//
// Build the module first: bash web/interop/build-wasm.sh. Then: node --test web/interop/
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { Worker } from "node:worker_threads";
import {
  AudioReader,
  AudioWriter,
  ParameterReader,
  ParameterWriter,
  RingBuffer,
  RingLayoutError,
  initializeParamQueue,
} from "@downbeat/ringbuf";
import { audio, param } from "./pattern.mjs";

const WASM = new URL("./build/downbeat_ring.wasm", import.meta.url);
/** Must match MAX_PAGES in build-wasm.sh. */
const PAGES = 256;
/** Element kind codes (docs/ring-layout.md). */
const KIND = { u32: 5, f32: 9 };
/** Error codes of crates/ring-wasm. */
const ERR = {
  ElementMismatch: -15,
  RecordMismatch: -17,
  BadMagic: -13,
  Misaligned: -11,
  Role: -5,
  Channels: -7,
};
/** Bytes from a ring's start to its storage (docs/ring-layout.md). */
const DATA_OFFSET = 384;

const F32_COUNT = 1_000_000;
const PARAM_COUNT = 100_000;
const AUDIO_FRAMES = 200_000;

let bytes;
let module;
let memory;
/** Hosts the wasm instance (the only one) and runs the Rust side of every transfer. */
let rust;
/** Runs the JavaScript side. */
let js;
let scratch;
let scratchEnd;
let handles = [];

/** A worker answering the requests of worker.mjs with promises. */
class Peer {
  constructor() {
    this.worker = new Worker(new URL("./worker.mjs", import.meta.url));
    this.next = 0;
    this.waiting = new Map();
    this.worker.on("message", ({ id, result, error }) => {
      const { resolve, reject } = this.waiting.get(id);
      this.waiting.delete(id);
      if (error !== undefined) reject(new Error(error));
      else resolve(result);
    });
    this.worker.on("error", (e) => {
      for (const { reject } of this.waiting.values()) reject(e);
      this.waiting.clear();
    });
  }
  request(msg) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ ...msg, id });
    });
  }
  call(name, ...args) {
    return this.request({ op: "call", name, args });
  }
  run(tasks) {
    return this.request({ op: "run", tasks });
  }
}

before(async () => {
  bytes = await readFile(WASM).catch((e) => {
    throw new Error(`${WASM.pathname} missing: run bash web/interop/build-wasm.sh (${e.message})`);
  });
  module = await WebAssembly.compile(bytes);
  memory = new WebAssembly.Memory({ initial: PAGES, maximum: PAGES, shared: true });
  rust = new Peer();
  js = new Peer();
  await rust.request({ op: "init", memory, module });
  await js.request({ op: "init", memory });
  scratch = await rust.call("scratch_ptr");
  scratchEnd = scratch + (await rust.call("scratch_len"));
});

after(async () => {
  await Promise.all([rust?.worker.terminate(), js?.worker.terminate()]);
});

/** Places rings one after another in the scratch region, each on a 128-byte boundary. */
function place(...sizes) {
  let at = scratch;
  const offsets = sizes.map((size) => {
    const offset = at;
    at += Math.ceil(size / 128) * 128;
    return offset;
  });
  assert.ok(at <= scratchEnd, "scratch region too small");
  // Start from zeroed memory, as a fresh allocation would be.
  new Uint8Array(memory.buffer, scratch, at - scratch).fill(0);
  return offsets;
}

/**
 * Attaches a Rust endpoint (`extra`: the channel count of an audio endpoint), expecting success;
 * detached after the test by `detachAll`.
 */
async function attach(kind, offset, len, ...extra) {
  const h = await rust.call(`attach_${kind}`, offset, len, ...extra);
  assert.ok(h >= 0, `attach_${kind} at ${offset}: error code ${h}`);
  handles.push(h);
  return h;
}

async function detachAll() {
  for (const h of handles) assert.equal(await rust.call("detach", h), 0);
  handles = [];
}

/** The limits of the module's imported memory, read from its import section. */
function memoryImport(wasmBytes) {
  let p = 8;
  const u8 = () => wasmBytes[p++];
  const leb = () => {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = u8();
      result += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if (b < 0x80) return result;
    }
  };
  const name = () => {
    const n = leb();
    const s = new TextDecoder().decode(wasmBytes.subarray(p, p + n));
    p += n;
    return s;
  };
  const limits = () => {
    const flags = u8();
    const min = leb();
    const max = flags & 1 ? leb() : undefined;
    return { shared: (flags & 2) !== 0, min, max };
  };
  while (p < wasmBytes.length) {
    const id = u8();
    const size = leb();
    const end = p + size;
    if (id === 2) {
      const count = leb();
      for (let i = 0; i < count; i++) {
        const where = `${name()}.${name()}`;
        const kind = u8();
        if (kind === 0) leb();
        else if (kind === 1) (u8(), limits());
        else if (kind === 3) (u8(), u8());
        else if (kind === 2) return { where, ...limits() };
      }
    }
    p = end;
  }
  return undefined;
}

test("the module imports a shared memory", () => {
  assert.deepEqual(WebAssembly.Module.imports(module), [
    { module: "env", name: "memory", kind: "memory" },
  ]);
  const mem = memoryImport(bytes);
  assert.equal(mem.where, "env.memory");
  assert.equal(mem.shared, true, "memory import is not shared: build with build-wasm.sh");
  assert.equal(mem.max, PAGES);
  assert.ok(mem.min <= PAGES, `module needs ${mem.min} pages`);
  const unshared = new WebAssembly.Memory({ initial: PAGES, maximum: PAGES });
  assert.throws(
    () => new WebAssembly.Instance(module, { env: { memory: unshared } }),
    WebAssembly.LinkError,
  );
});

test("rings laid out by JavaScript and by Rust are byte-identical and accepted by both", async (t) => {
  t.after(detachAll);
  const floats = RingBuffer.bytesForCapacity(257, Float32Array);
  const records = RingBuffer.bytesForCapacity(3 * 61, Uint32Array);
  const [jsF32, rustF32, jsParam, rustParam] = place(floats, floats, records, records);

  RingBuffer.initialize(memory.buffer, jsF32, 257, Float32Array);
  assert.equal(await rust.call("ring_init", rustF32, floats, KIND.f32, 257, 1), 0);
  initializeParamQueue(memory.buffer, jsParam, 61);
  assert.equal(await rust.call("ring_init", rustParam, records, KIND.u32, 61, 3), 0);
  assert.equal(await rust.call("ring_bytes", KIND.f32, 257, 1), floats);
  assert.equal(await rust.call("ring_bytes", KIND.u32, 61, 3), records);

  const view = (offset, len) => new Uint8Array(memory.buffer, offset, len);
  assert.deepEqual(view(jsF32, floats), view(rustF32, floats));
  assert.deepEqual(view(jsParam, records), view(rustParam, records));

  // Rust accepts JavaScript's rings...
  await attach("f32_producer", jsF32, floats);
  await attach("f32_consumer", jsF32, floats);
  await attach("param_writer", jsParam, records);
  await attach("param_reader", jsParam, records);
  // ...and JavaScript accepts Rust's.
  assert.equal(new RingBuffer(memory.buffer, Float32Array, rustF32).capacity(), 257);
  const params = new RingBuffer(memory.buffer, Uint32Array, rustParam);
  assert.equal(params.capacity(), 3 * 61);
  assert.equal(params.recordLength(), 3);
  new ParameterWriter(params);
  new ParameterReader(params);
});

test("each side refuses a ring of the wrong element kind or record length", async () => {
  const size = RingBuffer.bytesForCapacity(3 * 20, Uint32Array);
  const [u32Ring, paramRing, f32Ring, zeroed, rustU32] = place(size, size, size, size, size);
  RingBuffer.initialize(memory.buffer, u32Ring, 3 * 20, Uint32Array);
  initializeParamQueue(memory.buffer, paramRing, 20);
  RingBuffer.initialize(memory.buffer, f32Ring, 3 * 20, Float32Array);
  assert.equal(await rust.call("ring_init", rustU32, size, KIND.u32, 60, 1), 0);

  const refused = async (fn, offset, code) =>
    assert.equal(await rust.call(fn, offset, size), code, `${fn} at ${offset}`);
  await refused("attach_f32_producer", u32Ring, ERR.ElementMismatch);
  await refused("attach_f32_consumer", paramRing, ERR.ElementMismatch);
  await refused("attach_param_writer", f32Ring, ERR.ElementMismatch);
  await refused("attach_param_reader", u32Ring, ERR.RecordMismatch);
  await refused("attach_f32_consumer", zeroed, ERR.BadMagic);
  await refused("attach_f32_consumer", f32Ring + 4, ERR.Misaligned);

  const jsRefuses = (type, offset, code) =>
    assert.throws(
      () => new RingBuffer(memory.buffer, type, offset),
      (e) => e instanceof RingLayoutError && e.code === code,
    );
  jsRefuses(Float32Array, rustU32, "ElementMismatch");
  jsRefuses(Int32Array, rustU32, "ElementMismatch");
  jsRefuses(Float32Array, zeroed, "BadMagic");
});

/** Runs `rustTasks` and `jsTasks` at the same time on the two workers. */
async function both(rustTasks, jsTasks) {
  const t0 = performance.now();
  const [r, j] = await Promise.all([rust.run(rustTasks), js.run(jsTasks)]);
  return { rust: r, js: j, ms: performance.now() - t0 };
}

function report(t, what, count, result) {
  for (const s of [...result.rust, ...result.js]) {
    assert.equal(s.done, count);
    assert.equal(s.leftover, 0, "elements left over after the sequence");
  }
  t.diagnostic(`${what}: ${count} each way, verified on the receiving side, in ${result.ms.toFixed(0)} ms`);
}

test("f32 samples cross both ways at once through odd-sized rings", async (t) => {
  t.after(detachAll);
  const size = RingBuffer.bytesForCapacity(257, Float32Array);
  const [toRust, toJs] = place(size, size);
  RingBuffer.initialize(memory.buffer, toRust, 257, Float32Array); // laid out by JavaScript
  assert.equal(await rust.call("ring_init", toJs, size, KIND.f32, 257, 1), 0); // and by Rust
  const rx = await attach("f32_consumer", toRust, size);
  const tx = await attach("f32_producer", toJs, size);
  const result = await both(
    [
      { side: "wasm", kind: "f32", role: "consume", handle: rx, count: F32_COUNT },
      { side: "wasm", kind: "f32", role: "produce", handle: tx, count: F32_COUNT },
    ],
    [
      { side: "js", kind: "f32", role: "produce", byteOffset: toRust, count: F32_COUNT },
      { side: "js", kind: "f32", role: "consume", byteOffset: toJs, count: F32_COUNT },
    ],
  );
  report(t, "f32 samples", F32_COUNT, result);
});

test("parameter records cross both ways at once", async (t) => {
  t.after(detachAll);
  const records = 61;
  const size = RingBuffer.bytesForCapacity(3 * records, Uint32Array);
  const [toRust, toJs] = place(size, size);
  initializeParamQueue(memory.buffer, toRust, records);
  assert.equal(await rust.call("ring_init", toJs, size, KIND.u32, records, 3), 0);
  const rx = await attach("param_reader", toRust, size);
  const tx = await attach("param_writer", toJs, size);
  const result = await both(
    [
      { side: "wasm", kind: "param", role: "consume", handle: rx, count: PARAM_COUNT, maxBatch: 100 },
      { side: "wasm", kind: "param", role: "produce", handle: tx, count: PARAM_COUNT, maxBatch: 100 },
    ],
    [
      { side: "js", kind: "param", role: "produce", byteOffset: toRust, count: PARAM_COUNT, maxBatch: 100 },
      { side: "js", kind: "param", role: "consume", byteOffset: toJs, count: PARAM_COUNT, maxBatch: 100 },
    ],
  );
  report(t, "parameter records", PARAM_COUNT, result);
});

test("a ring changes hands: the sides swap roles mid-stream and carry on from its indices", async (t) => {
  t.after(detachAll);
  const size = RingBuffer.bytesForCapacity(257, Float32Array);
  const [ring] = place(size);
  RingBuffer.initialize(memory.buffer, ring, 257, Float32Array);
  const n = 100_003;
  const rx = await attach("f32_consumer", ring, size);
  await both(
    [{ side: "wasm", kind: "f32", role: "consume", handle: rx, count: n }],
    [{ side: "js", kind: "f32", role: "produce", byteOffset: ring, count: n }],
  );
  await detachAll();
  const tx = await attach("f32_producer", ring, size);
  const result = await both(
    [{ side: "wasm", kind: "f32", role: "produce", handle: tx, start: n, count: n }],
    [{ side: "js", kind: "f32", role: "consume", byteOffset: ring, start: n, count: n }],
  );
  assert.equal(result.js[0].leftover, 0);
  t.diagnostic(`2 x ${n} samples through one ring, JS -> Rust then Rust -> JS`);
});

test("a wrong element fails the transfer with its index and both values", async (t) => {
  t.after(detachAll);
  const size = RingBuffer.bytesForCapacity(257, Float32Array);
  const records = RingBuffer.bytesForCapacity(3 * 61, Uint32Array);
  const [toRust, toJs, paramsToRust, paramsToJs] = place(size, size, records, records);
  RingBuffer.initialize(memory.buffer, toRust, 257, Float32Array);
  RingBuffer.initialize(memory.buffer, toJs, 257, Float32Array);
  initializeParamQueue(memory.buffer, paramsToRust, 61);
  initializeParamQueue(memory.buffer, paramsToJs, 61);

  // JavaScript sends elements 0.., Rust expects 1000..: Rust must notice at the first one.
  const rx = await attach("f32_consumer", toRust, size);
  await assert.rejects(
    both(
      [{ side: "wasm", kind: "f32", role: "consume", handle: rx, start: 1000, count: 2000 }],
      [{ side: "js", kind: "f32", role: "produce", byteOffset: toRust, count: 100 }],
    ),
    /wasm f32 consume: element 1000: expected bits 0x[0-9a-f]{8}, found 0x[0-9a-f]{8}/,
  );
  // Rust sends 5.., JavaScript expects 0...
  const tx = await attach("f32_producer", toJs, size);
  await assert.rejects(
    both(
      [{ side: "wasm", kind: "f32", role: "produce", handle: tx, start: 5, count: 100 }],
      [{ side: "js", kind: "f32", role: "consume", byteOffset: toJs, count: 2000 }],
    ),
    /js f32 consume: element 0: expected -32768 \(0xc7000000\), found .* \(0x[0-9a-f]{8}\)/,
  );
  // One corrupted word in flight: a parameter id flipped by JavaScript before Rust reads it.
  const writer = new ParameterWriter(new RingBuffer(memory.buffer, Uint32Array, paramsToRust));
  for (let i = 0; i < 10; i++) {
    const p = param(i);
    assert.ok(writer.enqueueChange(i === 7 ? (p.index ^ 1) >>> 0 : p.index, p.value, p.frame));
  }
  const prx = await attach("param_reader", paramsToRust, records);
  await assert.rejects(
    rust.run([{ side: "wasm", kind: "param", role: "consume", handle: prx, count: 10 }]),
    /wasm param consume: record 7 word 0: expected 0x[0-9a-f]{8}, found 0x[0-9a-f]{8}/,
  );
  // And a frame off by one the other way.
  const ptx = await attach("param_writer", paramsToJs, records);
  await assert.rejects(
    both(
      [{ side: "wasm", kind: "param", role: "produce", handle: ptx, start: 1, count: 50 }],
      [{ side: "js", kind: "param", role: "consume", byteOffset: paramsToJs, count: 50 }],
    ),
    /js param consume: record 0 index: expected \d+, found \d+/,
  );
});

/** Bytes of an audio ring of `frames` frames of `channels` samples. */
const audioBytes = (frames, channels) => RingBuffer.bytesForCapacity(frames * channels, Float32Array);

test("audio rings: JavaScript's and Rust's layouts match, and the record length must be the channel count", async (t) => {
  t.after(detachAll);
  const size = audioBytes(251, 5);
  const [js5, rust5, jsMono, rustStereo] = place(size, size, size, audioBytes(256, 2));
  RingBuffer.initialize(memory.buffer, js5, 5 * 251, Float32Array, 5);
  assert.equal(await rust.call("ring_init", rust5, size, KIND.f32, 251, 5), 0);
  assert.equal(await rust.call("ring_bytes", KIND.f32, 251, 5), size);
  assert.deepEqual(new Uint8Array(memory.buffer, js5, size), new Uint8Array(memory.buffer, rust5, size));
  // The same samples, laid out with record length 1: a plain f32 ring.
  RingBuffer.initialize(memory.buffer, jsMono, 5 * 251, Float32Array);
  assert.equal(await rust.call("ring_init", rustStereo, audioBytes(256, 2), KIND.f32, 256, 2), 0);

  // Rust's audio endpoints accept JavaScript's ring with recordLength = channels...
  const rx = await rust.call("attach_audio_reader", js5, size, 5);
  const tx = await rust.call("attach_audio_writer", js5, size, 5);
  assert.ok(rx >= 0 && tx >= 0, `attach: ${rx} ${tx}`);
  handles.push(rx, tx);
  assert.equal(await rust.call("available", tx), 251);
  assert.equal(await rust.call("available", rx), 0);
  assert.equal(await rust.call("consume_audio", tx, 0, 1), ERR.Role);
  // ...and refuse it for any other channel count, or a ring with another record length.
  const refused = async (fn, offset, len, channels, code) =>
    assert.equal(await rust.call(fn, offset, len, channels), code, `${fn} at ${offset}, ${channels} channels`);
  for (const fn of ["attach_audio_reader", "attach_audio_writer"]) {
    for (const channels of [1, 2, 4, 6, 0]) await refused(fn, js5, size, channels, ERR.RecordMismatch);
    await refused(fn, jsMono, size, 5, ERR.RecordMismatch);
    await refused(fn, jsMono, size, 1000, ERR.Channels);
  }
  // The plain f32 endpoints want record length 1, and AudioWriter on Rust's ring sees its frames.
  assert.equal(await rust.call("attach_f32_consumer", js5, size), ERR.RecordMismatch);
  const stereo = new RingBuffer(memory.buffer, Float32Array, rustStereo);
  assert.equal(stereo.recordLength(), 2);
  assert.equal(stereo.capacity(), 512);
  const writer = new AudioWriter(stereo);
  assert.equal(writer.enqueue(new Float32Array(5)), 4, "whole frames only");
  assert.equal(writer.enqueuePlanar([new Float32Array(300), new Float32Array(300)]), 254);
  assert.equal(new AudioReader(stereo).dequeuePlanar([new Float32Array(10), new Float32Array(10)]), 10);
});

test("stereo audio crosses both ways at once: planar blocks in JavaScript, Rust verifying every sample", async (t) => {
  t.after(detachAll);
  const frames = 257;
  const size = audioBytes(frames, 2);
  const [toRust, toJs] = place(size, size);
  RingBuffer.initialize(memory.buffer, toRust, 2 * frames, Float32Array, 2); // laid out by JavaScript
  assert.equal(await rust.call("ring_init", toJs, size, KIND.f32, frames, 2), 0); // and by Rust
  const rx = await attach("audio_reader", toRust, size, 2);
  const tx = await attach("audio_writer", toJs, size, 2);
  const audioTask = { kind: "audio", channels: 2, count: AUDIO_FRAMES };
  const result = await both(
    [
      { ...audioTask, side: "wasm", role: "consume", handle: rx, via: "interleaved" },
      { ...audioTask, side: "wasm", role: "produce", handle: tx, via: "planar" },
    ],
    [
      { ...audioTask, side: "js", role: "produce", byteOffset: toRust },
      { ...audioTask, side: "js", role: "consume", byteOffset: toJs, via: "planar" },
    ],
  );
  report(t, "stereo frames (JS enqueuePlanar -> Rust, Rust -> JS dequeuePlanar)", AUDIO_FRAMES, result);
});

test("5-channel audio crosses both ways at once through rings of 251 frames", async (t) => {
  t.after(detachAll);
  const frames = 251; // 1255 samples: no power of two, so the indices wrap at odd places
  const size = audioBytes(frames, 5);
  const [toRust, toJs] = place(size, size);
  assert.equal(await rust.call("ring_init", toRust, size, KIND.f32, frames, 5), 0); // laid out by Rust
  RingBuffer.initialize(memory.buffer, toJs, 5 * frames, Float32Array, 5); // and by JavaScript
  const rx = await attach("audio_reader", toRust, size, 5);
  const tx = await attach("audio_writer", toJs, size, 5);
  const audioTask = { kind: "audio", channels: 5, count: AUDIO_FRAMES };
  const result = await both(
    [
      { ...audioTask, side: "wasm", role: "consume", handle: rx, via: "planar" },
      { ...audioTask, side: "wasm", role: "produce", handle: tx, via: "interleaved" },
    ],
    [
      { ...audioTask, side: "js", role: "produce", byteOffset: toRust },
      { ...audioTask, side: "js", role: "consume", byteOffset: toJs, via: "alternate" },
    ],
  );
  report(t, "5-channel frames (JS enqueuePlanar -> Rust, Rust -> JS dequeue/dequeuePlanar)", AUDIO_FRAMES, result);
});

test("a wrong audio sample fails the transfer with its frame, channel and both values", async (t) => {
  t.after(detachAll);
  const frames = 64;
  const channels = 3;
  const size = audioBytes(frames, channels);
  const [toRust, toJs, toJs2] = place(size, size, size);
  for (const at of [toRust, toJs, toJs2]) {
    RingBuffer.initialize(memory.buffer, at, frames * channels, Float32Array, channels);
  }
  const storage = (at) => new Float32Array(memory.buffer, at + DATA_OFFSET, frames * channels);
  const audioTask = { kind: "audio", channels };

  // JavaScript sends frames 0.., Rust expects 1000..: Rust must notice at the first sample.
  const rx = await attach("audio_reader", toRust, size, channels);
  await assert.rejects(
    both(
      [{ ...audioTask, side: "wasm", role: "consume", handle: rx, start: 1000, count: 2000 }],
      [{ ...audioTask, side: "js", role: "produce", byteOffset: toRust, count: 50 }],
    ),
    /wasm audio consume: frame 1000 channel 0: expected bits 0x[0-9a-f]{8}, found 0x[0-9a-f]{8}/,
  );
  // One sample swapped into the wrong channel in flight: channel 2 of frame 7 holds channel 1's.
  await detachAll();
  RingBuffer.initialize(memory.buffer, toRust, frames * channels, Float32Array, channels);
  const writer = new AudioWriter(new RingBuffer(memory.buffer, Float32Array, toRust));
  const block = [0, 1, 2].map((c) => Float32Array.from({ length: 10 }, (_, f) => audio(f, c)));
  block[2][7] = audio(7, 1);
  assert.equal(writer.enqueuePlanar(block), 10);
  const rx2 = await attach("audio_reader", toRust, size, channels);
  for (const via of ["interleaved", "planar"]) {
    await assert.rejects(
      rust.run([{ ...audioTask, side: "wasm", role: "consume", handle: rx2, via, count: 10, maxBatch: 10 }]),
      new RegExp(`wasm audio consume: frame 7 channel 2: expected bits 0x[0-9a-f]{8}, found 0x[0-9a-f]{8}`),
    );
    // The mismatch popped what was left; send the same ten frames again for the planar reader.
    assert.equal(await rust.call("available", rx2), 0);
    assert.equal(writer.enqueuePlanar(block), 10);
  }
  assert.equal(await rust.call("mismatch_field", rx2, 0), 7);
  assert.equal(await rust.call("mismatch_field", rx2, 3), 2);

  // Rust sends 5.., JavaScript expects 0.. (through dequeuePlanar, then through dequeue).
  const tx = await attach("audio_writer", toJs, size, channels);
  await assert.rejects(
    both(
      [{ ...audioTask, side: "wasm", role: "produce", handle: tx, start: 5, count: 20 }],
      [{ ...audioTask, side: "js", role: "consume", byteOffset: toJs, via: "planar", count: 2000 }],
    ),
    /js audio consume: frame 0 channel 0: expected -32768 \(0xc7000000\), found .* \(0x[0-9a-f]{8}\)/,
  );
  // A sample corrupted in the ring before JavaScript reads it: channel 1 of frame 3.
  const tx2 = await attach("audio_writer", toJs2, size, channels);
  assert.equal(await rust.call("produce_audio", tx2, 0, 10), 10);
  storage(toJs2)[3 * channels + 1] = 0.5;
  await assert.rejects(
    js.run([{ ...audioTask, side: "js", role: "consume", byteOffset: toJs2, via: "interleaved", count: 10 }]),
    /js audio consume: frame 3 channel 1: expected -?[\d.]+ \(0x[0-9a-f]{8}\), found 0.5 \(0x3f000000\)/,
  );
});
