// The worklet's core against a stand-in engine (fake-engine.mjs): the FIFO serves 128-frame
// quanta from project-sized blocks in order, events are applied before the block they belong
// to, a run with a length ends with the remainder block as the CLI renders it, the recording
// copies exactly its window, its stop fails when frames were lost, and the status board
// reports what the engine said.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RingBuffer } from "@downbeat/ringbuf";
import { Controller, Meters, Op, Recording } from "@downbeat/engine";
import { EngineCore } from "@downbeat/engine/core.js";
import { fakeEngine, fakeSample } from "./fake-engine.mjs";
import { processorOptions, readStatus, table } from "./util.mjs";

function quanta(core, count, frames = 128, channels = 2) {
  const out = Array.from({ length: channels }, () => new Float32Array(frames));
  const all = Array.from({ length: channels }, () => []);
  for (let q = 0; q < count; q++) {
    core.process(out);
    for (let c = 0; c < channels; c++) all[c].push(...out[c]);
  }
  return all;
}

for (const blockSize of [256, 128, 100, 64, 1000]) {
  test(`blocks of ${blockSize} are served as 128-frame quanta, every frame once, in order`, () => {
    const e = fakeEngine({ blockSize });
    const core = new EngineCore(processorOptions({ project: "p" }), e);
    const all = quanta(core, 40);
    for (let c = 0; c < 2; c++) {
      all[c].forEach((v, f) => assert.equal(v, fakeSample(f, c), `frame ${f} channel ${c}`));
    }
    assert.ok(e.log.renders.every((n) => n === blockSize), "only whole project blocks while running");
    assert.equal(core.position(), e.log.renders.length * blockSize);
    assert.ok(core.position() >= 40 * 128 && core.position() - 40 * 128 < blockSize);
  });
}

test("a run with a length renders the CLI's blocks: whole ones, then the remainder, then silence", () => {
  const e = fakeEngine({ blockSize: 256 });
  const core = new EngineCore(processorOptions({ length: 1000 }), e);
  const out = [new Float32Array(128), new Float32Array(128)];
  let more = true;
  let served = 0;
  while (more) {
    more = core.process(out);
    served += 128;
  }
  assert.deepEqual(e.log.renders, [256, 256, 256, 232]);
  assert.equal(served, 1024);
  assert.deepEqual([...out[0].subarray(0, 104)].map((v, i) => v === fakeSample(896 + i, 0)), new Array(104).fill(true));
  assert.deepEqual([...out[0].subarray(104)], new Array(24).fill(0), "silence after the end");
});

test("the project, its name, the files and the MIDI file are handed over before rendering", () => {
  const e = fakeEngine();
  const bytes = new Uint8Array([1, 2, 3]);
  new EngineCore(processorOptions({ project: "sample_rate = 48000", files: [["../samples/kick.wav", bytes]], midi: new Uint8Array(9) }), e);
  assert.deepEqual(e.log.loaded, ["sample_rate = 48000", "test.toml"]);
  assert.deepEqual(e.log.files, [["../samples/kick.wav", 3]]);
  assert.equal(e.log.midi, 9);
});

test("control records reach db_event before the next block, with their words intact", () => {
  const e = fakeEngine({ blockSize: 256 });
  const options = processorOptions();
  const core = new EngineCore(options, e);
  const c = new Controller({ control: options.control, table });
  quanta(core, 1); // block 0 rendered, 128 frames left in the FIFO
  c.setParam("osc", "freq", 330, { frame: 600 });
  c.noteOn(60, 0.75, { instrument: "pluck", channel: 2 });
  c.allNotesOff();
  quanta(core, 1); // served from the FIFO: no block, no events yet
  assert.equal(e.log.events.length, 0);
  quanta(core, 1); // block 1: the events first
  assert.deepEqual(e.log.events, [
    { at: 256, op: Op.Set, id: 1, lo: 600, hi: 0, value: 330, extra: 0, channel: 0 },
    { at: 256, op: Op.NoteOn, id: 1, lo: 0xffffffff, hi: 0xffffffff, value: 60, extra: 0.75, channel: 2 },
    { at: 256, op: Op.AllNotesOff, id: 0xffffffff, lo: 0xffffffff, hi: 0xffffffff, value: 0, extra: 0, channel: 0xffffffff },
  ]);
});

test("a burst larger than the engine's event list waits in the ring for later blocks, none refused", () => {
  const e = fakeEngine({ blockSize: 256, eventRoom: 3 });
  const options = processorOptions();
  const core = new EngineCore(options, e);
  const c = new Controller({ control: options.control, table });
  for (let i = 0; i < 7; i++) c.setParam("osc", "freq", 100 + i);
  quanta(core, 6); // three blocks
  assert.equal(e.db_dropped(), 0, "no event refused by the engine");
  assert.deepEqual(
    e.log.events.map((ev) => [ev.at, ev.value]),
    [[0, 100], [0, 101], [0, 102], [256, 103], [256, 104], [256, 105], [512, 106]],
  );
});

test("the status board carries position, meters, values and refused events", () => {
  const e = fakeEngine({ blockSize: 256, params: 2 });
  const options = processorOptions({ params: 2 });
  const core = new EngineCore(options, e);
  // An id the engine does not know (the main thread would never send it): counted, not lost.
  new Controller({ control: options.control, table: { ...table, params: [{ ...table.params[0], id: 7 }] } }).setParam("g", "gain", 2);
  new Controller({ control: options.control, table }).setParam("osc", "freq", 880);
  const seq = new Int32Array(options.status, 0, 1);
  quanta(core, 4);
  assert.equal(seq[0], 4, "two blocks, each posted between two bumps of the sequence word");
  // Position, counters, recording, the song (playing, beat, bar, bar's beat, bpm), meters, values.
  assert.deepEqual(
    [...readStatus(options)],
    [512, 0, 1, -3, 0, 0, 0, 0, 1, 512 / 24000, 0, 0, 120, 511, 511.25, 0, 1, 0, 880],
  );
});

test("recording copies exactly [start, stop) into the ring, interleaved, across block edges", () => {
  const e = fakeEngine({ blockSize: 256 });
  const options = processorOptions({ recordFrames: 4096 });
  const core = new EngineCore(options, e);
  const c = new Controller({ control: options.control, table });
  c._send(Op.RecordStart, 0, 300, 0, 0, 0, "record");
  c._send(Op.RecordStop, 0, 1234, 0, 0, 0, "record stop");
  quanta(core, 12);
  const ring = new RingBuffer(options.record, Float32Array);
  const got = new Float32Array(ring.availableRead());
  ring.pop(got);
  assert.equal(got.length, (1234 - 300) * 2);
  for (let i = 0; i < got.length; i++) assert.equal(got[i], fakeSample(300 + (i >> 1), i & 1), `sample ${i}`);
  const s = readStatus(options);
  assert.deepEqual([...s.subarray(4, 8)], [2, 934, 0, 300], "stopped, 934 frames, none lost, from 300");
});

test("recording into a ring that fills counts the lost frames instead of hiding them", () => {
  const e = fakeEngine({ blockSize: 256 });
  const options = processorOptions({ recordFrames: 1000 });
  const core = new EngineCore(options, e);
  new Controller({ control: options.control, table })._send(Op.RecordStart, 0, undefined, 0, 0, 0, "record");
  quanta(core, 16); // 2048 frames, nobody reading
  const s = readStatus(options);
  assert.equal(s[4], 1, "still recording");
  assert.equal(s[5], 1000);
  assert.equal(s[6], 2048 - 1000);
});

test("Meters reads the newest status however long since the last read", () => {
  const e = fakeEngine({ blockSize: 256, params: 3 });
  const options = processorOptions({ params: 3 });
  const core = new EngineCore(options, e);
  const meters = new Meters(options.status, 2, table);
  assert.equal(meters.update().value(1), 440, "the table's initial value before any block");
  quanta(core, 2);
  assert.equal(meters.update().position, 256);
  const c = new Controller({ control: options.control, table });
  c.setParam("osc", "freq", 1000);
  quanta(core, 400); // 200 blocks without a read
  assert.equal(meters.update().position, 51456);
  assert.equal(meters.value(1), 1000);
  assert.equal(meters.peak(1), 51455.25);
});

test("a read that overlaps the worklet's write is taken again, never torn", () => {
  const options = processorOptions({ params: 3 });
  const meters = new Meters(options.status, 2, table);
  const seq = new Int32Array(options.status, 0, 1);
  const board = new Float64Array(options.status, 8, 15);
  board[0] = 77;
  seq[0] = 3; // the worklet is writing: odd
  assert.equal(meters.update().position, 0, "no half-written status is taken");
  seq[0] = 4;
  assert.equal(meters.update().position, 77);
});

test("a recording's stop rejects, saying how many frames were lost, when the ring overflowed", async () => {
  // Recording writes through a Worker (a browser's; Node has none): a stand-in records what it
  // is told. The lost frames must fail stop() before the Worker's result or the file is used.
  const workers = [];
  const NodeWorker = globalThis.Worker;
  globalThis.Worker = class {
    constructor() {
      this.posted = [];
      this.terminated = false;
      workers.push(this);
    }
    postMessage(message) {
      this.posted.push(message);
    }
    terminate() {
      this.terminated = true;
    }
  };
  try {
    const e = fakeEngine({ blockSize: 256, params: 3 });
    const options = processorOptions({ params: 3, recordFrames: 1000 });
    const core = new EngineCore(options, e);
    const meters = new Meters(options.status, 2, table);
    const c = new Controller({ control: options.control, table });
    // As engine.record() does: the start, then the Recording.
    c._send(Op.RecordStart, 0, undefined, 0, 0, 0, "record");
    const recording = new Recording(options.record, 2, 48000, "take.wav", meters, c);
    quanta(core, 16); // 2048 frames into a ring of 1000 that nobody drains
    const stopped = recording.stop();
    quanta(core, 2); // the block that takes the stop
    await assert.rejects(stopped, {
      message: "the recording lost 1048 frames: its Worker fell behind by more than the ring holds",
    });
    assert.equal(workers.length, 1);
    const [worker] = workers;
    assert.deepEqual(worker.posted.at(-1), { end: 1000, abort: true }, "the Worker is told to abort");
    assert.ok(worker.terminated, "and is stopped");
    assert.equal(recording.finished, true);
  } finally {
    globalThis.Worker = NodeWorker;
  }
});
