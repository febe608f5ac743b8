/**
 * The control side: parameter changes, ramps and notes written as records into the control
 * ring, with names resolved to ids here, before anything is sent.
 *
 * @module
 */

import { RingBuffer } from "./ringbuf.js";
import type { EngineTable, ParamInfo } from "./abi.js";
import { ControlRingFull, UnknownName } from "./errors.js";
import { CONTROL_RECORD, NOW, Op } from "./protocol.js";

/**
 * Everything a {@link Controller} needs, as plain data that `postMessage` can send to a Worker:
 * the control ring's memory and the project's table.
 */
export interface ControllerInit {
  /** The control ring. */
  control: SharedArrayBuffer;
  /** What the project lets you address. */
  table: EngineTable;
}

/** When an event applies: an engine frame (frames rendered since the project loaded), or now. */
export interface At {
  /** The engine frame; default: the start of the next block the engine renders. */
  frame?: number;
}

/** Options of {@link Controller.setParam}. */
export interface SetOptions extends At {
  /** `false` jumps to the value at the frame, without the parameter's smoothing. Default `true`. */
  smooth?: boolean;
}

/** Options of {@link Controller.noteOn} and {@link Controller.noteOff}. */
export interface NoteOptions extends At {
  /** MIDI channel 0..15; default 0. */
  channel?: number;
  /** The node that plays it; default every node that plays notes. */
  instrument?: string;
}

/** Options of {@link Controller.allNotesOff}. */
export interface AllNotesOffOptions extends At {
  /** MIDI channel 0..15; default every channel. */
  channel?: number;
}

const TWO_32 = 0x1_0000_0000;

/**
 * Sends events to a running engine without `postMessage`: each call writes one record into the
 * shared control ring, which the worklet drains before every block it renders.
 *
 * Names are resolved here, so a typo throws at once, listing the names the project has. A full
 * ring throws {@link ControlRingFull} and sends nothing; no call ever drops silently.
 *
 * The ring has one writer: send from one thread at a time, either through the engine's own
 * controller (`engine.setParam(...)`) or through one made from `engine.controller()` in a Worker.
 *
 * ```js
 * // main thread
 * worker.postMessage(engine.controller());
 * // in the Worker
 * import { Controller } from "@downbeat/engine";
 * onmessage = ({ data }) => {
 *   const c = new Controller(data);
 *   c.setParam("lowpass", "freq", 1200);
 *   c.noteOn(60, 100, { instrument: "keys" });
 * };
 * ```
 */
export class Controller {
  private _table: EngineTable;
  private readonly _ring: RingBuffer<Uint32Array>;
  private readonly _record = new Uint32Array(CONTROL_RECORD);
  private readonly _floats = new Float32Array(this._record.buffer);
  private readonly _params = new Map<string, Map<string, ParamInfo>>();
  private readonly _instruments = new Map<string, number>();

  /**
   * Wraps the control ring of `init` (from `engine.controller()`, possibly in another thread).
   * After a live edit, make a new one from `engine.controller()` to address the nodes it added:
   * one made before goes on addressing the nodes it knew (those the edit kept keep their ids).
   */
  constructor(init: ControllerInit) {
    this._table = init.table;
    this._ring = new RingBuffer(init.control, Uint32Array);
    this._index(init.table);
  }

  /** What the project lets you address (after a live edit through this engine, the edited graph). */
  get table(): EngineTable {
    return this._table;
  }

  /** Addresses the graph `table` describes from now on (after a live edit). @internal */
  _setTable(table: EngineTable): void {
    this._table = table;
    this._params.clear();
    this._instruments.clear();
    this._index(table);
  }

  private _index(table: EngineTable): void {
    for (const p of table.params) {
      let node = this._params.get(p.node);
      if (!node) this._params.set(p.node, (node = new Map()));
      node.set(p.name, p);
    }
    for (const i of table.instruments) this._instruments.set(i.node, i.id);
  }

  /**
   * The parameter `node.param`, as the table describes it (id, range, initial value).
   *
   * @throws UnknownName listing the parameters the project has.
   */
  param(node: string, param: string): ParamInfo {
    const p = this._params.get(node)?.get(param);
    if (p) return p;
    const known = this.table.params.map((q) => `${q.node}.${q.name}`).join(", ");
    throw new UnknownName(
      `no parameter ${node}.${param} in this project; it has: ${known || "(none)"}`,
    );
  }

  /**
   * Sets `node.param` to `value` at a frame (default: now). The parameter's smoothing applies
   * unless `smooth: false`.
   *
   * ```js
   * engine.setParam("g", "gain", 0.5);
   * engine.setParam("g", "gain", 0, { frame: 48000, smooth: false }); // silent from 1 s on
   * ```
   *
   * @throws UnknownName, RangeError (value outside the parameter's range, or an output value),
   * ControlRingFull.
   */
  setParam(node: string, param: string, value: number, options?: SetOptions): true {
    const p = this._settable(node, param, value);
    const op = options?.smooth === false ? Op.Step : Op.Set;
    return this._send(op, p.id, options?.frame, value, 0, 0, node, param);
  }

  /**
   * Ramps `node.param` linearly from its value at the frame to `target` over `seconds`.
   *
   * ```js
   * engine.ramp("g", "gain", 0, 2); // fade out over two seconds, starting now
   * ```
   *
   * @throws UnknownName, RangeError, ControlRingFull.
   */
  ramp(node: string, param: string, target: number, seconds: number, options?: At): true {
    const p = this._settable(node, param, target);
    if (!(seconds >= 0) || !Number.isFinite(seconds)) {
      throw new RangeError(`ramp of ${node}.${param}: seconds must be 0 or more, got ${seconds}`);
    }
    return this._send(Op.Ramp, p.id, options?.frame, target, seconds, 0, node, param);
  }

  /**
   * Starts note `note` (0..127) with `velocity` (0..127) on every node that plays notes, or on
   * `instrument` only.
   *
   * ```js
   * engine.noteOn(60, 100);
   * engine.noteOn(64, 90, { instrument: "keys", channel: 1, frame: 96000 });
   * ```
   *
   * @throws UnknownName (instrument), RangeError, ControlRingFull.
   */
  noteOn(note: number, velocity: number, options?: NoteOptions): true {
    midiByte("note", note);
    midiByte("velocity", velocity);
    const channel = midiChannel(options?.channel ?? 0);
    const id = this._instrument(options?.instrument);
    return this._send(Op.NoteOn, id, options?.frame, note, velocity, channel, "note on");
  }

  /**
   * Releases note `note` (0..127) on every node that plays notes, or on `instrument` only.
   *
   * @throws UnknownName (instrument), RangeError, ControlRingFull.
   */
  noteOff(note: number, options?: NoteOptions): true {
    midiByte("note", note);
    const channel = midiChannel(options?.channel ?? 0);
    const id = this._instrument(options?.instrument);
    return this._send(Op.NoteOff, id, options?.frame, note, 0, channel, "note off");
  }

  /**
   * Releases every sounding note on `channel`, or on every channel.
   *
   * @throws RangeError, ControlRingFull.
   */
  allNotesOff(options?: AllNotesOffOptions): true {
    const channel = options?.channel === undefined ? NOW : midiChannel(options.channel);
    return this._send(Op.AllNotesOff, NOW, options?.frame, 0, 0, channel, "all notes off");
  }

  /** Records the control ring can take now. */
  room(): number {
    return Math.floor(this._ring.availableWrite() / CONTROL_RECORD);
  }

  /**
   * Writes one raw record; internal ops (recording) use it too. `what` and `param` name it in
   * errors, joined only when one is thrown: a string built per call would be garbage.
   *
   * @internal
   */
  _send(
    op: number,
    id: number,
    frame: number | undefined,
    value: number,
    extra: number,
    channel: number,
    what: string,
    param?: string,
  ): true {
    const r = this._record;
    r[0] = op;
    r[1] = id;
    if (frame === undefined) {
      r[2] = NOW;
      r[3] = NOW;
    } else {
      if (!Number.isSafeInteger(frame) || frame < 0) {
        throw new RangeError(`${label(what, param)}: frame must be a whole number of frames, 0 or more, got ${frame}`);
      }
      r[2] = frame % TWO_32;
      r[3] = Math.floor(frame / TWO_32);
    }
    this._floats[4] = value;
    this._floats[5] = extra;
    r[6] = channel;
    r[7] = 0;
    if (this._ring.push(r) !== CONTROL_RECORD) throw new ControlRingFull(label(what, param));
    return true;
  }

  private _settable(node: string, param: string, value: number): ParamInfo {
    const p = this.param(node, param);
    if (p.output) {
      throw new RangeError(`${node}.${param} is an output value: it can be read, not set`);
    }
    if (Number.isNaN(value) || (p.min !== null && value < p.min) || (p.max !== null && value > p.max)) {
      throw new RangeError(`${node}.${param} takes ${p.min} to ${p.max}, got ${value}`);
    }
    return p;
  }

  private _instrument(name: string | undefined): number {
    if (name === undefined) return NOW;
    const id = this._instruments.get(name);
    if (id !== undefined) return id;
    const known = this.table.instruments.map((i) => i.node).join(", ");
    throw new UnknownName(
      `no node named ${name} plays notes in this project; these do: ${known || "(none)"}`,
    );
  }
}

function label(what: string, param: string | undefined): string {
  return param === undefined ? what : `${what}.${param}`;
}

function midiByte(what: string, v: number): void {
  if (!Number.isInteger(v) || v < 0 || v > 127) {
    throw new RangeError(`${what} must be a whole number from 0 to 127, got ${v}`);
  }
}

function midiChannel(v: number): number {
  if (!Number.isInteger(v) || v < 0 || v > 15) {
    throw new RangeError(`channel must be a whole number from 0 to 15, got ${v}`);
  }
  return v;
}
