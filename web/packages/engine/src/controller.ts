/**
 * The control side: parameter changes, ramps and notes written as records into the control
 * ring, with names resolved to ids here, before anything is sent.
 *
 * @module
 */

import { RingBuffer } from "./ringbuf.js";
import type { EngineTable, ParamInfo } from "./abi.js";
import { ControlRingFull, UnknownName } from "./errors.js";
import { BEAT, CONTROL_RECORD, NEXT_BAR, NEXT_BEAT, NOW, Op } from "./protocol.js";

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

/** An engine frame (frames rendered since the project loaded), or now. */
export interface AtFrame {
  /** The engine frame; default: the start of the next block the engine renders. */
  frame?: number;
}

/**
 * When an event applies: at an engine frame, or when the playing song reaches a beat (on that
 * beat's exact frame, after whatever tempo changes, locates and loops come first), or now. Give
 * at most one of the four; none means the start of the next block the engine renders.
 *
 * ```js
 * engine.noteOn(60, 0.75, { beat: 16 });          // when the song reaches beat 16
 * engine.transport.stop({ nextBar: true });      // on the next bar line
 * engine.setParam("g", "gain", 0, { frame: 96000, smooth: false });
 * ```
 *
 * `nextBeat` and `nextBar` are worked out where the song is when the engine takes the event (the
 * start of the next block it renders). An event for a beat the song has already passed applies at
 * once; one waiting for a beat waits while the transport is stopped.
 */
export interface At extends AtFrame {
  /** The song's beat: quarter notes from its start (0 or more). */
  beat?: number;
  /** On the next beat line of the time signature (`true`). */
  nextBeat?: boolean;
  /** On the next bar line (`true`). */
  nextBar?: boolean;
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
 *   c.noteOn(60, 0.75, { instrument: "keys" });
 * };
 * ```
 */
export class Controller {
  private _table: EngineTable;
  private readonly _ring: RingBuffer<Uint32Array>;
  private readonly _record = new Uint32Array(CONTROL_RECORD);
  private readonly _floats = new Float32Array(this._record.buffer);
  /** Where a beat's f64 is split into its two u32 words, little-endian as wasm reads them. */
  private readonly _beat = new DataView(new ArrayBuffer(8));
  private readonly _params = new Map<string, Map<string, ParamInfo>>();
  private readonly _instruments = new Map<string, number>();

  /** The song's transport: play, stop, locate, loop, tempo (see {@link Transport}). */
  readonly transport: Transport = new Transport(this);

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
   * Sets `node.param` to `value` at a frame or a beat (default: now; see {@link At}). The
   * parameter's smoothing applies unless `smooth: false`.
   *
   * ```js
   * engine.setParam("g", "gain", 0.5);
   * engine.setParam("g", "gain", 0, { frame: 48000, smooth: false }); // silent from 1 s on
   * engine.setParam("g", "gain", 1, { beat: 32, smooth: false });     // back on beat 32
   * ```
   *
   * @throws UnknownName, RangeError (value outside the parameter's range, or an output value),
   * ControlRingFull.
   */
  setParam(node: string, param: string, value: number, options?: SetOptions): true {
    const p = this._settable(node, param, value);
    const op = options?.smooth === false ? Op.Step : Op.Set;
    return this._sendAt(op, p.id, options, value, 0, 0, node, param);
  }

  /**
   * Ramps `node.param` linearly from its value at the frame (or beat) to `target` over `seconds`.
   *
   * ```js
   * engine.ramp("g", "gain", 0, 2);                    // fade out over two seconds, starting now
   * engine.ramp("g", "gain", 1, 0.5, { nextBar: true }); // fade in from the next bar line
   * ```
   *
   * @throws UnknownName, RangeError, ControlRingFull.
   */
  ramp(node: string, param: string, target: number, seconds: number, options?: At): true {
    const p = this._settable(node, param, target);
    if (!(seconds >= 0) || !Number.isFinite(seconds)) {
      throw new RangeError(`ramp of ${node}.${param}: seconds must be 0 or more, got ${seconds}`);
    }
    return this._sendAt(Op.Ramp, p.id, options, target, seconds, 0, node, param);
  }

  /**
   * Starts note `note` (0..127) with `velocity` (0..1, as in Rust and over OSC; 0 is a note
   * off) on every node that plays notes, or on `instrument` only.
   *
   * ```js
   * engine.noteOn(60, 0.75);
   * engine.noteOn(64, 0.625, { instrument: "keys", channel: 1, frame: 96000 });
   * engine.noteOn(67, 0.625, { beat: 8.5 });             // when the song reaches beat 8.5
   * engine.noteOff(67, { beat: 9 });
   * ```
   *
   * @throws UnknownName (instrument), RangeError, ControlRingFull.
   */
  noteOn(note: number, velocity: number, options?: NoteOptions): true {
    midiByte("note", note);
    unitVelocity(velocity);
    const channel = midiChannel(options?.channel ?? 0);
    const id = this._instrument(options?.instrument);
    return this._sendAt(Op.NoteOn, id, options, note, velocity, channel, "note on");
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
    return this._sendAt(Op.NoteOff, id, options, note, 0, channel, "note off");
  }

  /**
   * Releases every sounding note on `channel`, or on every channel.
   *
   * @throws RangeError, ControlRingFull.
   */
  allNotesOff(options?: AllNotesOffOptions): true {
    const channel = options?.channel === undefined ? NOW : midiChannel(options.channel);
    return this._sendAt(Op.AllNotesOff, NOW, options, 0, 0, channel, "all notes off");
  }

  /** Records the control ring can take now. */
  room(): number {
    return Math.floor(this._ring.availableWrite() / CONTROL_RECORD);
  }

  /**
   * Writes one raw record at a frame (or now); internal ops (recording) use it too. `what` and
   * `param` name it in errors, joined only when one is thrown: a string built per call would be
   * garbage.
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
    return this._write(op, id, value, extra, channel, what, param);
  }

  /**
   * Writes one raw record timed by `at`: a frame, a beat, the next beat or bar line, or now.
   *
   * @internal
   */
  _sendAt(
    op: number,
    id: number,
    at: At | undefined,
    value: number,
    extra: number,
    channel: number,
    what: string,
    param?: string,
  ): true {
    if (at === undefined) return this._send(op, id, undefined, value, extra, channel, what, param);
    const beat = at.beat !== undefined;
    const given = (at.frame !== undefined ? 1 : 0) + (beat ? 1 : 0) + (at.nextBeat ? 1 : 0) + (at.nextBar ? 1 : 0);
    if (given > 1) {
      throw new RangeError(`${label(what, param)}: give one of frame, beat, nextBeat and nextBar, not ${given}`);
    }
    const r = this._record;
    if (beat) {
      const b = at.beat as number;
      if (typeof b !== "number" || !Number.isFinite(b) || b < 0) {
        throw new RangeError(`${label(what, param)}: beat must be a number of beats from 0 up, got ${b}`);
      }
      this._beat.setFloat64(0, b, true);
      r[2] = this._beat.getUint32(0, true);
      r[3] = this._beat.getUint32(4, true);
    } else if (at.nextBeat) {
      r[2] = NEXT_BEAT;
      r[3] = NOW;
    } else if (at.nextBar) {
      r[2] = NEXT_BAR;
      r[3] = NOW;
    } else {
      return this._send(op, id, at.frame, value, extra, channel, what, param);
    }
    return this._write(op | BEAT, id, value, extra, channel, what, param);
  }

  /** Fills in the rest of the record (its time is in words 2 and 3 already) and pushes it. */
  private _write(
    op: number,
    id: number,
    value: number,
    extra: number,
    channel: number,
    what: string,
    param?: string,
  ): true {
    const r = this._record;
    r[0] = op;
    r[1] = id;
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

function unitVelocity(v: number): void {
  if (!(v >= 0 && v <= 1)) {
    throw new RangeError(`velocity must be a number from 0 to 1 (0 is a note off), got ${v}`);
  }
}

function midiChannel(v: number): number {
  if (!Number.isInteger(v) || v < 0 || v > 15) {
    throw new RangeError(`channel must be a whole number from 0 to 15, got ${v}`);
  }
  return v;
}

/**
 * The song's transport, as a project's `[tempo]` and `[transport]` tables set it going: play,
 * stop, locate, loop and live tempo changes, each at a frame, on a beat, on the next beat or bar
 * line, or now (see {@link At}), carried out on that exact frame as the native engine's
 * `Controller::transport` does. Stopped, the song stands still (the engine's frames go on, a
 * metronome is silent, events waiting for beats wait); a locate or a loop wrap moves it.
 *
 * ```js
 * engine.transport.loop(0, 16);                     // four bars of 4/4, now
 * engine.transport.tempo(140, 8, { beat: 4 });      // from beat 4, linearly over 8 beats to 140 bpm
 * engine.transport.stop({ nextBar: true });         // on the next bar line
 * engine.transport.locate(8, { frame: 480000 });
 * engine.transport.play({ frame: 480000 });
 * const m = engine.meters();                        // where the song is, after every block
 * console.log(m.playing, m.bar, m.beat - m.barBeat, m.bpm);
 * ```
 *
 * Beats and tempos travel as 32-bit floats (exact for any beat that is a whole number of 1/1024
 * beats below 16,384); the time an event waits for (`{ beat }`) as a 64-bit one. Every call
 * checks what the engine would refuse and throws `RangeError` instead of sending it, or
 * `ControlRingFull`.
 */
export class Transport {
  private readonly _c: Controller;

  /** @internal */
  constructor(controller: Controller) {
    this._c = controller;
  }

  /** Plays from where the song stands. */
  play(at?: At): true {
    return this._c._sendAt(Op.Play, 0, at, 0, 0, 0, "transport.play");
  }

  /** Stops where the song is: its position stays. */
  stop(at?: At): true {
    return this._c._sendAt(Op.Stop, 0, at, 0, 0, 0, "transport.stop");
  }

  /**
   * Moves the song to `beat` (playing or not).
   *
   * @throws RangeError for a beat that is negative or not a number.
   */
  locate(beat: number, at?: At): true {
    const b = beats("transport.locate", "beat", beat);
    return this._c._sendAt(Op.Locate, 0, at, b, 0, 0, "transport.locate");
  }

  /**
   * Loops the song from beat `start` to beat `end`: when it reaches `end` it goes on from
   * `start` (replacing the loop it had, the project's `[transport]` one included).
   *
   * @throws RangeError for a loop that does not end after it starts, or a negative beat.
   */
  loop(start: number, end: number, at?: At): true {
    const a = beats("transport.loop", "start", start);
    const b = beats("transport.loop", "end", end);
    if (!(b > a)) {
      throw new RangeError(
        `transport.loop: a loop from beat ${start} to beat ${end} must end at least one frame after it starts`,
      );
    }
    return this._c._sendAt(Op.Loop, 0, at, a, b, 0, "transport.loop");
  }

  /** No more looping. */
  unloop(at?: At): true {
    return this._c._sendAt(Op.Unloop, 0, at, 0, 0, 0, "transport.unloop");
  }

  /**
   * From the beat where it lands, the tempo goes to `bpm` linearly over `rampBeats` beats (0, the
   * default: at once) and stays there: the tempo map's later changes are dropped. Beats before it
   * keep their frames; later ones, and the loop's, move. 512 per run.
   *
   * ```js
   * engine.transport.tempo(90, { nextBar: true });   // a step to 90 bpm on the next bar line
   * engine.transport.tempo(140, 8, { beat: 16 });    // from beat 16, over 8 beats to 140 bpm
   * ```
   *
   * @throws RangeError for a tempo not above 0 or above 999, or a ramp that is negative or not a
   * number.
   */
  tempo(bpm: number, at?: At): true;
  tempo(bpm: number, rampBeats: number, at?: At): true;
  tempo(bpm: number, rampOrAt?: number | At, at?: At): true {
    const [rampBeats, when] = typeof rampOrAt === "object" ? [0, rampOrAt] : [rampOrAt ?? 0, at];
    const t = Math.fround(bpm);
    const r = Math.fround(rampBeats);
    if (!(t > 0 && t <= 999) || !(r >= 0 && Number.isFinite(r))) {
      throw new RangeError(
        `transport.tempo: a tempo of ${bpm} bpm over ${rampBeats} beats: the tempo must be above 0 and at most 999, the ramp 0 or more beats`,
      );
    }
    return this._c._sendAt(Op.Tempo, 0, when, t, r, 0, "transport.tempo");
  }
}

/** `beat` as the f32 the record carries, checked. */
function beats(what: string, name: string, beat: number): number {
  const b = Math.fround(beat);
  if (typeof beat !== "number" || !Number.isFinite(b) || b < 0) {
    throw new RangeError(`${what}: ${name} must be a number of beats from 0 up, got ${beat}`);
  }
  return b;
}
