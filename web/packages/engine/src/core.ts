/**
 * The audio-thread half: one wasm engine, fed from the control ring and rendering the project's
 * own block size, with a FIFO that serves Web Audio's 128-frame quanta from those blocks. It
 * knows nothing of `AudioWorkletProcessor` (see `processor.ts`), so Node can drive it too, with
 * a fake `process` loop against the real module.
 *
 * Nothing on the per-block path allocates: every view, record and callback is made in the
 * constructor, numbers that change live in typed arrays (a number stored in an object field can
 * be boxed), and the module's memory is read through one view that is only remade if the memory
 * grows (it does not while rendering). A live edit ({@link EngineCore.edit}) allocates, between
 * blocks; the block that takes it over does not.
 *
 * @module
 */

import { editEngine, engineExports, loadProject, paramSlots, readTable, utf8Encode, type EngineExports } from "./abi.js";
import { batchJson, type EditBatch, type EditOptions, type EditResult } from "./edit.js";
import { EngineError } from "./errors.js";
import { RingBuffer } from "./ringbuf.js";
import {
  CONTROL_RECORD,
  Op,
  Status,
  statusBoardBytes,
  statusRecordLength,
  type ProcessorOptions,
} from "./protocol.js";

/** What {@link EngineCore.edit} gives: the edit's frame and table, and the new status board if it made one. */
export interface CoreEditResult extends EditResult {
  /** The larger status board the core reports on from the next block, or null when it kept its board. */
  status: SharedArrayBuffer | null;
}

// Indices into EngineCore's number cells.
const POSITION = 0; // engine frames rendered
const REMAINING = 1; // frames left to render (-1: no end)
const REC_START = 2; // first engine frame recorded
const REC_STOP = 3; // first engine frame not recorded (Infinity: until stopped)
const REC_STATE = 4;
const RECORDED = 5;
const REC_LOST = 6;
const EVENT_ERRORS = 7;
const LAST_EVENT_ERROR = 8;
const BLOCK_START = 9; // engine frame of the block being served
const CELLS = 10;

/**
 * One engine on the audio thread. Construct it (allocates: instantiates the module and loads
 * the project), then call {@link EngineCore.process} once per quantum.
 *
 * ```js
 * import { EngineCore } from "@downbeat/engine/core.js";
 * const core = new EngineCore(options); // the ProcessorOptions DownbeatEngine.create makes
 * const out = [new Float32Array(128), new Float32Array(128)];
 * core.process(out); // the first 128 frames of the project
 * ```
 */
export class EngineCore {
  /** The module's exports. */
  readonly exports: EngineExports;
  /** The project's channels, block size and sample rate. */
  readonly channels: number;
  readonly blockSize: number;
  readonly sampleRate: number;

  private readonly _n = new Float64Array(CELLS);
  private _heap: Float32Array;
  private _heapBuffer: ArrayBuffer;
  /** Float offsets of each channel's output of the last block in `_heap`. */
  private readonly _out: Int32Array;
  /** Frames of the last block not yet served, and where they start in it. */
  private _avail = 0;
  private _offset = 0;

  private readonly _control: RingBuffer<Uint32Array>;
  private readonly _event = new Int32Array(CONTROL_RECORD);
  private readonly _eventFloats = new Float32Array(this._event.buffer);

  /** The status board: its sequence word and its record (see `statusBoardBytes`). */
  private _status: SharedArrayBuffer;
  private _seq: Int32Array;
  private _statusRecord: Float64Array;
  /** Parameter ids the board has a value for. */
  private _params: number;

  private readonly _record: RingBuffer<Float32Array>;
  /** First frame of the last block to copy, and how many, for `_fill`. */
  private _recFrom = 0;

  /**
   * Instantiates the module synchronously (fine off the main thread), hands over the files,
   * loads the project and the MIDI file. Pass `exports` to use an instance made elsewhere.
   *
   * @throws EngineError with the engine's message if the project does not load (the main
   * thread loaded it first, so this only happens if the two differ).
   */
  constructor(options: ProcessorOptions, exports?: EngineExports) {
    // `exports` lets a test put a stand-in where the instance's exports go.
    const e = exports ?? engineExports(new WebAssembly.Instance(options.module, {}));
    loadProject(e, options);
    this.exports = e;
    this.channels = e.db_channels();
    this.blockSize = e.db_block_size();
    this.sampleRate = e.db_sample_rate();
    if (!(this.blockSize > 0) || !(this.channels > 0)) {
      throw new EngineError(-2, `the engine reports ${this.channels} channels and ${this.blockSize}-frame blocks`);
    }
    this._heapBuffer = e.memory.buffer;
    this._heap = new Float32Array(this._heapBuffer);
    this._out = new Int32Array(this.channels);
    this._control = new RingBuffer(options.control, Uint32Array);
    this._params = options.params;
    const len = statusRecordLength(this.channels, this._params);
    if (options.status.byteLength !== statusBoardBytes(this.channels, this._params)) {
      throw new EngineError(-2, "the status board's size does not match the project");
    }
    this._status = options.status;
    this._seq = new Int32Array(options.status, 0, 1);
    this._statusRecord = new Float64Array(options.status, 8, len);
    this._record = new RingBuffer(options.record, Float32Array);
    const n = this._n;
    n[REMAINING] = options.length;
    n[REC_STOP] = Infinity;
  }

  /** Frames the engine has rendered. */
  position(): number {
    return this._n[POSITION];
  }

  /** The status board the worklet writes after every block (a larger one after an edit that adds parameters). */
  get status(): SharedArrayBuffer {
    return this._status;
  }

  /**
   * Edits the running graph: one batch, applied all or none (see `EditBatch`), taken over at the
   * start of the next block this core renders (frame {@link EngineCore.position}); every node the
   * batch leaves alone goes on with its state. Call it between two {@link EngineCore.process}
   * calls, never from one: it builds the new nodes and compiles the edited graph (it allocates).
   * When the edit adds parameter ids beyond the status board, the core moves to a larger board
   * ({@link EngineCore.status}), which its first block after the edit fills.
   *
   * ```js
   * core.process(out);                    // ... blocks ...
   * const { frame, table } = core.edit({ add: { g: { type: "gain", gain: 0.5 } },
   *                                      disconnect: ["s -> out"], connect: ["s -> g -> out"] });
   * core.process(out);                    // the block at `frame` takes the edit over
   * core.reclaim();                       // frees the old schedule, here, between blocks
   * ```
   *
   * @throws EngineError with the engine's message, and nothing changed: -7 refused (an unknown
   * node, type, parameter or port, a name taken, a cycle, channel counts that differ, removing
   * the output, a run that has ended), -6 a node the browser cannot run, -2 not a batch, -8 the
   * engine has not rendered since the last 8 edits.
   */
  edit(batch: EditBatch | string, options: EditOptions = {}): CoreEditResult {
    const files = Object.entries(options.files ?? {}).map(([path, b]) => ({
      path: utf8Encode(path),
      bytes: b instanceof Uint8Array ? b : new Uint8Array(b),
    }));
    return this._edit(utf8Encode(batchJson(batch)), files);
  }

  /** {@link EngineCore.edit} with the batch as UTF-8 JSON (as the worklet receives it). @internal */
  _edit(
    batch: Uint8Array,
    files: { path: Uint8Array; bytes: Uint8Array }[],
  ): CoreEditResult {
    const n = this._n;
    if (n[REMAINING] === 0) {
      throw new EngineError(-7, "the run has ended: no block is left to take the edit over");
    }
    const e = this.exports;
    try {
      editEngine(e, batch, files);
    } finally {
      this._viewMemory();
    }
    const table = readTable(e);
    const slots = paramSlots(table);
    let status: SharedArrayBuffer | null = null;
    if (slots > this._params) {
      // A larger board, made here between blocks; its first record is the next block's.
      status = new SharedArrayBuffer(statusBoardBytes(this.channels, slots));
      this._status = status;
      this._seq = new Int32Array(status, 0, 1);
      this._statusRecord = new Float64Array(status, 8, statusRecordLength(this.channels, slots));
      this._params = slots;
    }
    return { frame: n[POSITION], table, status };
  }

  /**
   * Frees the schedules the engine handed back since the last edit, with the nodes edits
   * removed. Between blocks, after the block that took an edit over; the next edit does it too.
   * Returns how many.
   */
  reclaim(): number {
    const freed = this.exports.db_reclaim();
    this._viewMemory();
    return freed;
  }

  /** Views the module's memory again if it grew (an edit may grow it; the frames still in the FIFO are in it). */
  private _viewMemory(): void {
    const buffer = this.exports.memory.buffer;
    if (buffer !== this._heapBuffer) {
      this._heapBuffer = buffer;
      this._heap = new Float32Array(buffer);
    }
  }

  /**
   * Fills `out` (one array per channel, all of the same length, e.g. Web Audio's 128 frames)
   * with the next frames of the project, rendering a block of the project's size whenever the
   * FIFO runs dry. Events in the control ring apply from the next block rendered. Returns false
   * once a run with a length has rendered all of it (the rest of `out` is silence).
   */
  process(out: Float32Array[]): boolean {
    const frames = out.length > 0 ? out[0].length : 0;
    const channels = out.length < this.channels ? out.length : this.channels;
    let done = 0;
    while (done < frames) {
      if (this._avail === 0 && this._renderBlock() === 0) {
        for (let c = 0; c < out.length; c++) out[c].fill(0, done);
        return false;
      }
      const k = frames - done < this._avail ? frames - done : this._avail;
      const heap = this._heap;
      for (let c = 0; c < channels; c++) {
        const dst = out[c];
        const src = this._out[c] + this._offset;
        for (let i = 0; i < k; i++) dst[done + i] = heap[src + i];
      }
      for (let c = channels; c < out.length; c++) out[c].fill(0, done, done + k);
      this._offset += k;
      this._avail -= k;
      done += k;
    }
    return true;
  }

  /** Renders the next block: drains the control ring, renders, records, posts the status. */
  private _renderBlock(): number {
    const n = this._n;
    this._drainControl();
    let frames = this.blockSize;
    if (n[REMAINING] >= 0 && n[REMAINING] < frames) frames = n[REMAINING];
    if (frames === 0) return 0;
    const e = this.exports;
    const got = e.db_render(frames);
    if (got <= 0) return 0;
    if (e.memory.buffer !== this._heapBuffer) {
      // The memory grew (the engine does not allocate while rendering, so this is rare):
      // one new view.
      this._heapBuffer = e.memory.buffer;
      this._heap = new Float32Array(this._heapBuffer);
    }
    for (let c = 0; c < this.channels; c++) this._out[c] = e.db_output_ptr(c) >>> 2;
    n[BLOCK_START] = n[POSITION];
    n[POSITION] += got;
    if (n[REMAINING] >= 0) n[REMAINING] -= got;
    this._avail = got;
    this._offset = 0;
    if (n[REC_STATE] === 1) this._recordBlock(got);
    this._report();
    return got;
  }

  /** Pops control records and applies them: recording ops here, the rest in the engine. */
  private _drainControl(): void {
    const ev = this._event;
    const f = this._eventFloats;
    const n = this._n;
    const e = this.exports;
    // Pop no more than the engine takes before this block: the rest stays in the ring for the
    // next one (and a caller that keeps sending past that gets ControlRingFull), never refused.
    let room = e.db_event_room();
    while (room > 0 && this._control.pop(ev) === CONTROL_RECORD) {
      const op = ev[0];
      if (op === Op.RecordStart || op === Op.RecordStop) {
        // "now" is the start of the next block, which is about to be rendered.
        const at = ev[2] === -1 && ev[3] === -1 ? n[POSITION] : (ev[2] >>> 0) + (ev[3] >>> 0) * 0x1_0000_0000;
        if (op === Op.RecordStart) {
          n[REC_START] = at;
          n[REC_STOP] = Infinity;
          n[REC_STATE] = 1;
          n[RECORDED] = 0;
          n[REC_LOST] = 0;
        } else {
          n[REC_STOP] = at;
        }
        continue;
      }
      room -= 1;
      const r = e.db_event(op, ev[1], ev[2], ev[3], f[4], f[5], ev[6]);
      // -5 (the engine's event list is full) is counted by the engine itself (db_dropped).
      if (r < 0 && r !== -5) {
        n[EVENT_ERRORS] += 1;
        n[LAST_EVENT_ERROR] = r;
      }
    }
  }

  /** Copies the part of the block just rendered that falls in the recording into its ring. */
  private _recordBlock(got: number): void {
    const n = this._n;
    const start = n[BLOCK_START];
    const end = start + got;
    const from = n[REC_START] > start ? n[REC_START] : start;
    const to = n[REC_STOP] < end ? n[REC_STOP] : end;
    if (to > from) {
      const frames = to - from;
      this._recFrom = from - start;
      const wrote = this._record.writeCallbackWithOffset(frames * this.channels, this._fill) / this.channels;
      n[RECORDED] += wrote;
      n[REC_LOST] += frames - wrote;
    }
    if (n[REC_STOP] <= end) n[REC_STATE] = 2;
  }

  /** Interleaves the recorded frames into the ring's storage (bound once: no closure per block). */
  private readonly _fill = (s: Float32Array, o1: number, n1: number, o2: number, n2: number): number => {
    const ch = this.channels;
    const heap = this._heap;
    const frames = ((n1 + n2) / ch) | 0;
    const base = this._recFrom;
    for (let c = 0; c < ch; c++) {
      const src = this._out[c] + base;
      for (let i = 0; i < frames; i++) {
        const k = i * ch + c;
        s[k < n1 ? o1 + k : o2 + k - n1] = heap[src + i];
      }
    }
    return frames * ch;
  };

  /** The status after every block, on the board: sequence word odd while writing. */
  private _report(): void {
    const s = this._statusRecord;
    const seq = Atomics.load(this._seq, 0);
    Atomics.store(this._seq, 0, (seq + 1) | 0);
    const n = this._n;
    const e = this.exports;
    const ch = this.channels;
    s[Status.Position] = n[POSITION];
    s[Status.Dropped] = e.db_dropped();
    s[Status.EventErrors] = n[EVENT_ERRORS];
    s[Status.LastEventError] = n[LAST_EVENT_ERROR];
    s[Status.RecordState] = n[REC_STATE];
    s[Status.RecordedFrames] = n[RECORDED];
    s[Status.RecordLost] = n[REC_LOST];
    s[Status.RecordStart] = n[REC_START];
    s[Status.Playing] = e.db_transport_playing();
    s[Status.Beat] = e.db_transport_beat();
    s[Status.Bar] = e.db_transport_bar();
    s[Status.BarBeat] = e.db_transport_bar_beat();
    s[Status.Bpm] = e.db_transport_bpm();
    for (let c = 0; c < ch; c++) {
      s[Status.Header + c] = e.db_peak(c);
      s[Status.Header + ch + c] = e.db_rms(c);
    }
    const values = Status.Header + 2 * ch;
    for (let id = 0; id < this._params; id++) s[values + id] = e.db_value(id);
    Atomics.store(this._seq, 0, (seq + 2) | 0);
  }
}
