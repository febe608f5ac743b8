// The control side: every call writes exactly the record ABI.md describes, names resolve to the
// table's ids (or throw listing the known ones), and a full ring throws instead of dropping.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RingBuffer } from "@downbeat/ringbuf";
import { CONTROL_RECORD, ControlRingFull, Controller, NOW, Op, UnknownName } from "@downbeat/engine";
import { table } from "./util.mjs";

function setup(records = 16) {
  const control = RingBuffer.getStorageForCapacity(records * CONTROL_RECORD, Uint32Array, CONTROL_RECORD);
  const reader = new RingBuffer(control, Uint32Array);
  const pop = () => {
    const r = new Uint32Array(CONTROL_RECORD);
    assert.equal(reader.pop(r), CONTROL_RECORD, "one whole record");
    const f = new Float32Array(r.buffer);
    return { op: r[0], id: r[1], lo: r[2], hi: r[3], value: f[4], extra: f[5], channel: r[6], pad: r[7] };
  };
  return { c: new Controller({ control, table }), pop, reader };
}

test("setParam writes a set (or step) record with the table's id, now or at a frame", () => {
  const { c, pop } = setup();
  assert.equal(c.setParam("osc", "freq", 220.5), true);
  assert.deepEqual(pop(), { op: Op.Set, id: 1, lo: NOW, hi: NOW, value: 220.5, extra: 0, channel: 0, pad: 0 });
  c.setParam("g", "gain", 0.25, { frame: 2 ** 32 + 5, smooth: false });
  assert.deepEqual(pop(), { op: Op.Step, id: 0, lo: 5, hi: 1, value: 0.25, extra: 0, channel: 0, pad: 0 });
  c.setParam("g", "gain", 3, { frame: 0 });
  assert.deepEqual(pop(), { op: Op.Set, id: 0, lo: 0, hi: 0, value: 3, extra: 0, channel: 0, pad: 0 });
});

test("ramp, notes and all-notes-off write their ops", () => {
  const { c, pop } = setup();
  c.ramp("g", "gain", 0, 1.5, { frame: 4800 });
  assert.deepEqual(pop(), { op: Op.Ramp, id: 0, lo: 4800, hi: 0, value: 0, extra: 1.5, channel: 0, pad: 0 });
  c.noteOn(60, 0.75);
  assert.deepEqual(pop(), { op: Op.NoteOn, id: NOW, lo: NOW, hi: NOW, value: 60, extra: 0.75, channel: 0, pad: 0 });
  c.noteOn(64, 0.625, { instrument: "pluck", channel: 9, frame: 7 });
  assert.deepEqual(pop(), { op: Op.NoteOn, id: 1, lo: 7, hi: 0, value: 64, extra: 0.625, channel: 9, pad: 0 });
  c.noteOff(64, { instrument: "keys", channel: 3 });
  assert.deepEqual(pop(), { op: Op.NoteOff, id: 0, lo: NOW, hi: NOW, value: 64, extra: 0, channel: 3, pad: 0 });
  c.allNotesOff();
  assert.deepEqual(pop(), { op: Op.AllNotesOff, id: NOW, lo: NOW, hi: NOW, value: 0, extra: 0, channel: NOW, pad: 0 });
  c.allNotesOff({ channel: 2 });
  assert.equal(pop().channel, 2);
});

test("unknown names throw UnknownName listing what the project has; nothing is sent", () => {
  const { c, reader } = setup();
  assert.throws(() => c.setParam("g", "gian", 1), (e) => {
    assert.ok(e instanceof UnknownName);
    assert.equal(e.message, "no parameter g.gian in this project; it has: g.gain, osc.freq, env.level");
    return true;
  });
  assert.throws(() => c.ramp("nope", "gain", 1, 1), UnknownName);
  assert.throws(() => c.noteOn(60, 1, { instrument: "drums" }), {
    name: "UnknownName",
    message: "no node named drums plays notes in this project; these do: keys, pluck",
  });
  assert.equal(reader.availableRead(), 0);
});

test("values out of range, output values, bad notes and frames throw RangeError", () => {
  const { c, reader } = setup();
  assert.throws(() => c.setParam("g", "gain", 5), { name: "RangeError", message: "g.gain takes 0 to 4, got 5" });
  assert.throws(() => c.setParam("g", "gain", NaN), RangeError);
  assert.throws(() => c.setParam("env", "level", 0.5), { message: "env.level is an output value: it can be read, not set" });
  assert.throws(() => c.ramp("g", "gain", 1, -1), RangeError);
  assert.throws(() => c.noteOn(128, 1), { message: "note must be a whole number from 0 to 127, got 128" });
  assert.throws(() => c.noteOn(60, 1.5), RangeError);
  assert.throws(() => c.noteOff(60, { channel: 16 }), RangeError);
  assert.throws(() => c.setParam("g", "gain", 1, { frame: -1 }), RangeError);
  assert.throws(() => c.setParam("g", "gain", 1, { frame: 0.5 }), RangeError);
  assert.equal(reader.availableRead(), 0);
  assert.equal(c.param("env", "level").output, true);
});

test("a full ring throws ControlRingFull and writes nothing; room comes back as the reader drains", () => {
  const { c, pop, reader } = setup(4);
  assert.equal(c.room(), 4);
  for (let i = 0; i < 4; i++) c.setParam("g", "gain", i);
  assert.equal(c.room(), 0);
  assert.throws(() => c.setParam("g", "gain", 1), (e) => {
    assert.ok(e instanceof ControlRingFull);
    assert.equal(e.message, "the control ring is full: g.gain was not sent");
    return true;
  });
  assert.throws(() => c.noteOn(1, 1), ControlRingFull);
  assert.equal(reader.availableRead(), 4 * CONTROL_RECORD, "no partial record");
  assert.equal(pop().value, 0);
  c.noteOn(1, 1);
  assert.deepEqual([1, 2, 3].map(() => pop().value), [1, 2, 3]);
  assert.equal(pop().op, Op.NoteOn);
});

test("a controller made from posted data (structured clone) drives the same ring", async () => {
  const { c, pop } = setup();
  const { port1, port2 } = new MessageChannel();
  const init = await new Promise((ok) => {
    port2.onmessage = ({ data }) => ok(data);
    port1.postMessage({ control: c["_ring"].buf, table });
  });
  port1.close();
  port2.close();
  new Controller(init).setParam("osc", "freq", 1000);
  assert.equal(pop().value, 1000);
});
