import { RingBuffer } from "./ringbuffer.js";
import type { TypedArray } from "./layout.js";

/**
 * Interleaves planar channels into `output`: frame `i` of channel `c` goes to
 * `output[i * channels + c]`. The frame count is `output.length / input.length`, whatever it is
 * (ringbuf.js only knew 128).
 *
 * ```js
 * import { interleave } from "@downbeat/ringbuf";
 * const out = new Float32Array(4);
 * interleave([new Float32Array([1, 2]), new Float32Array([3, 4])], out); // out = [1, 3, 2, 4]
 * ```
 *
 * @throws RangeError if `output.length` is not a multiple of the channel count, or a channel is
 * shorter than the frame count.
 */
export function interleave(input: ArrayLike<number>[], output: Float32Array): void {
  const channels = input.length;
  const frames = channels === 0 ? 0 : output.length / channels;
  if (!Number.isInteger(frames)) {
    throw new RangeError(
      `output length ${output.length} is not a multiple of the channel count ${channels}`,
    );
  }
  for (let c = 0; c < channels; c++) {
    const channel = input[c];
    if (channel.length < frames) {
      throw new RangeError(`channel ${c} has ${channel.length} frames, ${frames} needed`);
    }
    for (let i = 0, j = c; i < frames; i++, j += channels) output[j] = channel[i];
  }
}

/**
 * Splits interleaved `input` into planar channels: the frame count is
 * `input.length / output.length`, for any block length.
 *
 * ```js
 * import { deinterleave } from "@downbeat/ringbuf";
 * const l = new Float32Array(2), r = new Float32Array(2);
 * deinterleave(new Float32Array([1, 3, 2, 4]), [l, r]); // l = [1, 2], r = [3, 4]
 * ```
 *
 * @throws RangeError if `input.length` is not a multiple of the channel count, or an output
 * channel is shorter than the frame count.
 */
export function deinterleave(input: ArrayLike<number>, output: Float32Array[]): void {
  const channels = output.length;
  const frames = channels === 0 ? 0 : input.length / channels;
  if (!Number.isInteger(frames)) {
    throw new RangeError(
      `input length ${input.length} is not a multiple of the channel count ${channels}`,
    );
  }
  for (let c = 0; c < channels; c++) {
    const channel = output[c];
    if (channel.length < frames) {
      throw new RangeError(`output channel ${c} has room for ${channel.length} of ${frames} frames`);
    }
    for (let i = 0, j = c; i < frames; i++, j += channels) channel[i] = input[j];
  }
}

function requireFloat32(ring: RingBuffer, who: string): void {
  if (ring.type() !== "Float32Array") {
    throw new TypeError(`${who} requires a ring buffer of Float32Array, got ${ring.type()}`);
  }
}

/**
 * Producer side of an interleaved audio stream over a `Float32Array` ring. When the ring was made
 * with a record length (the channel count, as Rust's `AudioQueue` does), every call moves whole
 * frames only.
 *
 * ```js
 * import { AudioWriter, RingBuffer } from "@downbeat/ringbuf";
 * const sab = RingBuffer.getStorageForCapacity(2 * 1024, Float32Array, 2); // stereo, 1024 frames
 * const writer = new AudioWriter(new RingBuffer(sab, Float32Array));
 * writer.enqueue(new Float32Array([0.1, -0.1, 0.2, -0.2])); // 4 samples: 2 frames
 * writer.enqueuePlanar([new Float32Array(128), new Float32Array(128)]); // 128 frames
 * ```
 */
export class AudioWriter {
  /** The ring written to. */
  readonly ringbuf: RingBuffer;

  /** @throws TypeError unless `ringbuf` holds `Float32Array` elements. */
  constructor(ringbuf: RingBuffer) {
    requireFloat32(ringbuf, "AudioWriter");
    this.ringbuf = ringbuf;
  }

  /**
   * Pushes interleaved samples; returns how many were taken (whole frames when the ring has a
   * record length). The rest are still in `buf`.
   */
  enqueue(buf: Float32Array): number {
    return this.ringbuf.push(buf);
  }

  /**
   * Interleaves planar channels straight into the ring, without a temporary buffer or any
   * allocation: as many whole frames as fit, up to `frames` (default: the first channel's
   * length). Returns the number of frames taken.
   */
  enqueuePlanar(channels: Float32Array[], frames = channels.length ? channels[0].length : 0): number {
    const n = channels.length;
    if (n === 0) return 0;
    this._planar = channels;
    this._channels = n;
    const wrote = this.ringbuf.writeCallbackWithOffset(frames * n, this._fill);
    this._planar = EMPTY;
    return wrote / n;
  }

  /** Samples that can be enqueued now. */
  availableWrite(): number {
    return this.ringbuf.availableWrite();
  }

  /** ringbuf.js' old name for {@link AudioWriter.availableWrite}. @deprecated */
  available_write(): number {
    return this.availableWrite();
  }

  private _planar: Float32Array[] = EMPTY;
  private _channels = 1;
  // Bound once so that enqueuePlanar creates no closure per call.
  private readonly _fill = (
    s: TypedArray,
    o1: number,
    n1: number,
    o2: number,
    n2: number,
  ): number => {
    const storage = s as Float32Array;
    const channels = this._channels;
    const planar = this._planar;
    // Whole frames only: the capacity may not be a multiple of the channel count.
    const frames = Math.floor((n1 + n2) / channels);
    for (let f = 0; f < frames; f++) {
      for (let c = 0; c < channels; c++) {
        const k = f * channels + c;
        storage[k < n1 ? o1 + k : o2 + k - n1] = planar[c][f];
      }
    }
    return frames * channels;
  };
}

/**
 * Consumer side of an interleaved audio stream over a `Float32Array` ring.
 *
 * ```js
 * import { AudioReader, RingBuffer } from "@downbeat/ringbuf";
 * const sab = RingBuffer.getStorageForCapacity(2 * 1024, Float32Array, 2); // from the main thread
 * // In an AudioWorkletProcessor:
 * const reader = new AudioReader(new RingBuffer(sab, Float32Array));
 * // process(inputs, outputs), here with a stand-in for the output block:
 * const output = [new Float32Array(128), new Float32Array(128)];
 * const frames = reader.dequeuePlanar(output); // deinterleaves straight into the output
 * for (const channel of output) channel.fill(0, frames); // silence if the ring ran dry
 * ```
 */
export class AudioReader {
  /** The ring read from. */
  readonly ringbuf: RingBuffer;

  /** @throws TypeError unless `ringbuf` holds `Float32Array` elements. */
  constructor(ringbuf: RingBuffer) {
    requireFloat32(ringbuf, "AudioReader");
    this.ringbuf = ringbuf;
  }

  /**
   * Pops up to `buf.length` interleaved samples into the start of `buf`; returns how many
   * (whole frames when the ring has a record length).
   */
  dequeue(buf: Float32Array): number {
    return this.ringbuf.pop(buf);
  }

  /**
   * Deinterleaves straight from the ring into planar channels, without a temporary buffer or any
   * allocation: up to `frames` whole frames (default: the first channel's length). Returns the
   * number of frames read; channels past that are left untouched.
   */
  dequeuePlanar(channels: Float32Array[], frames = channels.length ? channels[0].length : 0): number {
    const n = channels.length;
    if (n === 0) return 0;
    this._planar = channels;
    this._channels = n;
    const read = this.ringbuf.readCallbackWithOffset(frames * n, this._drain);
    this._planar = EMPTY;
    return read / n;
  }

  /** Samples that can be dequeued now. */
  availableRead(): number {
    return this.ringbuf.availableRead();
  }

  /** ringbuf.js' old name for {@link AudioReader.availableRead}. @deprecated */
  available_read(): number {
    return this.availableRead();
  }

  private _planar: Float32Array[] = EMPTY;
  private _channels = 1;
  private readonly _drain = (
    s: TypedArray,
    o1: number,
    n1: number,
    o2: number,
    n2: number,
  ): number => {
    const storage = s as Float32Array;
    const channels = this._channels;
    const planar = this._planar;
    const frames = Math.floor((n1 + n2) / channels);
    for (let f = 0; f < frames; f++) {
      for (let c = 0; c < channels; c++) {
        const k = f * channels + c;
        planar[c][f] = storage[k < n1 ? o1 + k : o2 + k - n1];
      }
    }
    return frames * channels;
  };
}

const EMPTY: Float32Array[] = [];
