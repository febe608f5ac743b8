/**
 * The status ring's reader: meters, parameter values and counters, as the worklet reports them
 * after every block.
 *
 * @module
 */

import type { EngineTable } from "./abi.js";
import { Status, statusRecordLength } from "./protocol.js";
import { RingBuffer } from "./ringbuf.js";

/**
 * The latest status the worklet reported. One object per engine, updated in place by
 * `engine.meters()`: reading it allocates nothing.
 *
 * ```js
 * const m = engine.meters();
 * console.log(m.position, m.peak(0), m.rms(1), m.dropped);
 * ```
 *
 * The worklet writes one record per block and skips it when the ring is full; a read takes
 * everything waiting and keeps the newest. After a long pause without reads the first read is
 * as old as the ring is long (`position` says which frame it describes); the next is current.
 */
export class Meters {
  private readonly _ring: RingBuffer<Float64Array>;
  private readonly _latest: Float64Array;
  private readonly _scratch: Float64Array;
  private readonly _channels: number;

  /** @internal */
  constructor(status: SharedArrayBuffer, channels: number, table: EngineTable) {
    this._ring = new RingBuffer(status, Float64Array);
    const len = statusRecordLength(channels, table.params.length);
    this._latest = new Float64Array(len);
    this._scratch = new Float64Array(len);
    this._channels = channels;
    for (const p of table.params) this._latest[Status.Header + 2 * channels + p.id] = p.initial;
  }

  /** Takes every waiting record, keeping the newest. @internal */
  update(): this {
    let got = false;
    while (this._ring.pop(this._scratch) > 0) got = true;
    if (got) this._latest.set(this._scratch);
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
