/**
 * The status board's reader: meters, parameter values and counters, as the worklet posts them
 * after every block.
 *
 * @module
 */

import { paramSlots, type EngineTable } from "./abi.js";
import { Status, statusRecordLength } from "./protocol.js";

/**
 * The latest status the worklet reported. One object per engine, updated in place by
 * `engine.meters()`: reading it allocates nothing.
 *
 * ```js
 * const m = engine.meters();
 * console.log(m.position, m.peak(0), m.rms(1), m.dropped);
 * console.log(m.playing, m.bar + 1, m.beat - m.barBeat + 1, m.bpm); // "bar 3, beat 2.5, 120 bpm"
 * ```
 *
 * The worklet posts its status after every block on a shared board (a seqlock: see
 * `statusBoardBytes`); a read copies the newest, however long since the last read. Any number
 * of threads may read the same board.
 */
export class Meters {
  private _seq: Int32Array;
  private _board: Float64Array;
  private _latest: Float64Array;
  private _scratch: Float64Array;
  private readonly _channels: number;

  /** @internal */
  constructor(status: SharedArrayBuffer, channels: number, table: EngineTable) {
    const len = statusRecordLength(channels, paramSlots(table));
    this._seq = new Int32Array(status, 0, 1);
    this._board = new Float64Array(status, 8, len);
    this._latest = new Float64Array(len);
    this._scratch = new Float64Array(len);
    this._channels = channels;
    for (const p of table.params) this._latest[Status.Header + 2 * channels + p.id] = p.initial;
  }

  /**
   * After a live edit: reads `status` from now on when the worklet moved to a larger board (null:
   * the same board), keeping the latest status, with the initial values of the parameters the
   * edit added until the worklet reports theirs. @internal
   */
  _rebind(status: SharedArrayBuffer | null, table: EngineTable, added: Set<number>): void {
    const values = Status.Header + 2 * this._channels;
    if (status !== null) {
      const len = statusRecordLength(this._channels, paramSlots(table));
      const latest = new Float64Array(len);
      latest.set(this._latest.subarray(0, Math.min(len, this._latest.length)));
      this._seq = new Int32Array(status, 0, 1);
      this._board = new Float64Array(status, 8, len);
      this._latest = latest;
      this._scratch = new Float64Array(len);
    }
    for (const p of table.params) if (added.has(p.id)) this._latest[values + p.id] = p.initial;
  }

  /**
   * Copies the newest status. The worklet rewrites the board every block (a few microseconds);
   * a copy it overlapped is thrown away and taken again, a few times at most, after which the
   * previous status stays. @internal
   */
  update(): this {
    const board = this._board;
    const scratch = this._scratch;
    for (let tries = 0; tries < 16; tries++) {
      const before = Atomics.load(this._seq, 0);
      if (before === 0) return this; // nothing rendered yet: the initial values stand
      if ((before & 1) !== 0) continue;
      for (let i = 0; i < board.length; i++) scratch[i] = board[i];
      if (Atomics.load(this._seq, 0) === before) {
        this._latest.set(scratch);
        return this;
      }
    }
    return this;
  }

  /** Frames the engine had rendered when it wrote this status. */
  get position(): number {
    return this._latest[Status.Position];
  }

  /** Events the engine refused because its event list was full (never dropped silently). */
  get dropped(): number {
    return this._latest[Status.Dropped];
  }

  /** Events the engine refused for another reason, and the last one's code (ABI.md). */
  get eventErrors(): number {
    return this._latest[Status.EventErrors];
  }
  get lastEventError(): number {
    return this._latest[Status.LastEventError];
  }

  /** Whether the song plays (the transport), after the last block. */
  get playing(): boolean {
    return this._latest[Status.Playing] === 1;
  }

  /** The song's beat after the last block: quarter notes from its start (0 before the first block). */
  get beat(): number {
    return this._latest[Status.Beat];
  }

  /** The song's bar after the last block, counted from 0. */
  get bar(): number {
    return this._latest[Status.Bar];
  }

  /** The beat the song's bar started on: `beat - barBeat` is the beat within the bar. */
  get barBeat(): number {
    return this._latest[Status.BarBeat];
  }

  /** The song's tempo after the last block, in quarter notes per minute (0 before the first block). */
  get bpm(): number {
    return this._latest[Status.Bpm];
  }

  /** Peak of the last block on `channel`. */
  peak(channel: number): number {
    return this._latest[Status.Header + channel];
  }

  /** RMS of the last block on `channel`. */
  rms(channel: number): number {
    return this._latest[Status.Header + this._channels + channel];
  }

  /** The value of parameter `id` (see the table) after the last block. */
  value(id: number): number {
    return this._latest[Status.Header + 2 * this._channels + id];
  }

  /** The raw status record, for the recording. @internal */
  get raw(): Float64Array {
    return this._latest;
  }
}
