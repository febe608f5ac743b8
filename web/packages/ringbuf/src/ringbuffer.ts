import {
  HEADER_BYTES,
  READ_INDEX_OFFSET,
  WRITE_INDEX_OFFSET,
  bytesForCapacity,
  readHeader,
  writeHeader,
  type TypedArray,
  type TypedArrayConstructor,
} from "./layout.js";

/**
 * Called by {@link RingBuffer.writeCallback} and {@link RingBuffer.readCallback} with two views
 * of the ring's storage: fill (or read) `first`, then `second`. Return how many elements were
 * written (or read), counting from the start of `first`; returning nothing means all of them.
 */
export type RingBufferCallback<T extends TypedArray = TypedArray> = (
  first: T,
  second: T,
) => number | void;

/**
 * Called by {@link RingBuffer.writeCallbackWithOffset} and
 * {@link RingBuffer.readCallbackWithOffset} with the ring's whole storage and the two runs to
 * fill (or read): `count1` elements from `offset1`, then `count2` from `offset2`. Return how many
 * elements were written (or read), counting from the start of the first run; returning nothing
 * means all of them. No object is created, so this is the variant for an audio thread.
 */
export type RingBufferOffsetCallback<T extends TypedArray = TypedArray> = (
  storage: T,
  offset1: number,
  count1: number,
  offset2: number,
  count2: number,
) => number | void;

/**
 * Below this many elements a copy is an element loop, which creates no object; from here on it is
 * `TypedArray.set`, which is a memcpy but needs a subarray view (one short-lived object) unless
 * the whole source array is copied in one run.
 */
const BULK = 64;

/** log2 of the number of storage views a ring keeps for bulk pops. */
const VIEW_CACHE_BITS = 6;

/**
 * A wait-free single-producer single-consumer ring buffer in a `SharedArrayBuffer`: the same
 * API as ringbuf.js 0.4, laid out in Downbeat's shared layout so that Rust (native or
 * WebAssembly) can sit on the other end.
 *
 * One thread pushes and another pops; neither ever waits for the other. Each side keeps its own
 * position privately and the other's cached, reloading that only when the cache says full
 * (producer) or empty (consumer); the two indices live on separate cache lines. So a busy ring
 * does not make the cores fight over one line, and an operation costs one atomic store.
 *
 * Like a Rust `Producer` or `Consumer`, a `RingBuffer` object is one side's handle: make one per
 * thread and side, and do not push (or pop) through two objects over the same memory at once.
 * One object may do both within a single thread.
 *
 * ```js
 * import { RingBuffer } from "@downbeat/ringbuf";
 *
 * // Main thread: make the memory, then send it to the worklet (or a Worker), e.g. with
 * // node.port.postMessage(sab).
 * const sab = RingBuffer.getStorageForCapacity(1024, Float32Array);
 *
 * // Each side wraps the same memory.
 * const ring = new RingBuffer(sab, Float32Array);
 * ring.push(new Float32Array([0.1, 0.2, 0.3])); // 3
 * const out = new Float32Array(128);
 * ring.pop(out); // 3: out[0..3] hold the samples
 * ```
 *
 * Capacity is exact (no slot is wasted) and any capacity up to 2^30 works. A ring may carry
 * records of several elements (see `recordLength`): then every push, pop and callback moves
 * whole records only.
 */
export class RingBuffer<T extends TypedArray = TypedArray> {
  /**
   * Allocates a `SharedArrayBuffer` for a ring of `capacity` elements of `type` and writes its
   * header. Pass it to the constructor on each side.
   *
   * `recordLength` (default 1) makes every operation move whole records of that many elements,
   * e.g. the channel count for interleaved audio; the capacity must be a multiple of it.
   *
   * ```js
   * const sab = RingBuffer.getStorageForCapacity(4096, Float32Array);
   * const stereo = RingBuffer.getStorageForCapacity(2 * 512, Float32Array, 2);
   * ```
   *
   * @throws TypeError if `type` is not a typed array constructor.
   * @throws RingLayoutError if the capacity is out of range or not a multiple of the record length.
   */
  static getStorageForCapacity(
    capacity: number,
    type: TypedArrayConstructor,
    recordLength = 1,
  ): SharedArrayBuffer {
    const sab = new SharedArrayBuffer(bytesForCapacity(Math.max(0, capacity | 0), type));
    writeHeader(sab, 0, capacity, type, recordLength);
    return sab;
  }

  /**
   * Bytes a ring of `capacity` elements of `type` needs: 384 for the header and indices, then
   * the storage. Use it to carve rings out of memory you own, such as a WebAssembly memory.
   *
   * ```js
   * RingBuffer.bytesForCapacity(1000, Float32Array); // 4384
   * ```
   */
  static bytesForCapacity(capacity: number, type: TypedArrayConstructor): number {
    return bytesForCapacity(capacity, type);
  }

  /**
   * Lays out an empty ring at `byteOffset` in memory you own (for instance `memory.buffer` of a
   * shared `WebAssembly.Memory`, at an address the module gave you), exactly as Rust's
   * `RingLayout::init` does. The offset must be a multiple of 8.
   *
   * ```js
   * const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
   * RingBuffer.initialize(memory.buffer, 1024, 256, Float32Array);
   * const ring = new RingBuffer(memory.buffer, Float32Array, 1024);
   * ```
   *
   * @throws RingLayoutError if the ring does not fit, or the offset or capacity is invalid.
   */
  static initialize(
    buffer: ArrayBufferLike,
    byteOffset: number,
    capacity: number,
    type: TypedArrayConstructor,
    recordLength = 1,
  ): void {
    writeHeader(buffer, byteOffset, capacity, type, recordLength);
  }

  /** The element type's constructor. */
  private readonly _type: TypedArrayConstructor<T>;
  /** Capacity in elements. */
  private readonly _cap: number;
  /** Index space: indices run in `0 .. 2 * capacity`. */
  private readonly _span: number;
  /** Elements per record. */
  private readonly _rec: number;
  /** The write index word (producer stores, consumer loads). */
  private readonly _write: Int32Array;
  /** The read index word (consumer stores, producer loads). */
  private readonly _read: Int32Array;
  /** The producer's own position: it alone writes the write index, so memory never differs. */
  private _writePos: number;
  /** The consumer's own position, likewise. */
  private _readPos: number;
  /** The producer's last view of the read index: stale only towards "less room". */
  private _readCache: number;
  /** The consumer's last view of the write index: stale only towards "less to read". */
  private _writeCache: number;
  /** The element slots. */
  private readonly _storage: T;
  /** Storage views for bulk pops, see `_view`. */
  private readonly _views: (T | null)[] = new Array(1 << VIEW_CACHE_BITS).fill(null);
  /** The slot each cached view starts at. */
  private readonly _viewSlots = new Int32Array(1 << VIEW_CACHE_BITS);
  /** Byte offset of the header in the buffer. */
  private readonly _offset: number;
  /** The memory holding the ring. */
  readonly buf: ArrayBufferLike;

  /**
   * Wraps a ring that already exists in `sab`, checking its header: made by
   * {@link RingBuffer.getStorageForCapacity}, {@link RingBuffer.initialize}, or by Rust.
   *
   * @param sab The memory: a `SharedArrayBuffer`, `memory.buffer` of a shared
   * `WebAssembly.Memory`, or an `ArrayBuffer` for a ring used within one thread.
   * @param type The element type the ring holds; it must match the header.
   * @param byteOffset Where the ring starts in `sab` (default 0), a multiple of 8.
   * @throws RingLayoutError if the memory does not hold a valid ring of `type`.
   */
  constructor(sab: ArrayBufferLike, type: TypedArrayConstructor<T>, byteOffset = 0) {
    const { capacity, recordLength } = readHeader(sab, byteOffset, type);
    this.buf = sab;
    this._type = type;
    this._offset = byteOffset;
    this._cap = capacity;
    this._span = 2 * capacity;
    this._rec = recordLength;
    this._write = new Int32Array(sab, byteOffset + WRITE_INDEX_OFFSET, 1);
    this._read = new Int32Array(sab, byteOffset + READ_INDEX_OFFSET, 1);
    this._storage = new type(sab, byteOffset + HEADER_BYTES, capacity);
    this._readCache = this._readPos = Atomics.load(this._read, 0);
    this._writeCache = this._writePos = Atomics.load(this._write, 0);
  }

  /** The name of the element type, such as `"Float32Array"` (as in ringbuf.js). */
  type(): string {
    return this._type.name;
  }

  /** How many elements the ring holds when full: exactly the capacity asked for. */
  capacity(): number {
    return this._cap;
  }

  /** Elements per record: every operation moves a multiple of this. 1 for a plain ring. */
  recordLength(): number {
    return this._rec;
  }

  /** Where the ring starts in {@link RingBuffer.buf}. */
  byteOffset(): number {
    return this._offset;
  }

  /**
   * Producer: copies up to `length` elements of `elements`, starting at `offset`, into the ring.
   * Never blocks; returns how many were pushed (0 when full), rounded down to whole records.
   * Elements not pushed are still in `elements`, to push later.
   *
   * ```js
   * const ring = new RingBuffer(RingBuffer.getStorageForCapacity(4, Int32Array), Int32Array);
   * ring.push(new Int32Array([1, 2, 3, 4, 5, 6])); // 4: the ring is full
   * ring.push(new Int32Array([9, 9, 7, 8]), 2, 2); // 0 now; after two pops it would push 7, 8
   * ```
   *
   * @param elements Values to push (any typed array; they are converted as by assignment).
   * @param length The most to push; default: everything from `offset` to the end.
   * @param offset Index in `elements` of the first value to push; default 0.
   */
  push(elements: ArrayLike<number | bigint>, length?: number, offset = 0): number {
    const cap = this._cap;
    const write = this._writePos;
    let n = elements.length - offset;
    if (length !== undefined && length < n) n = length;
    let used = write - this._readCache;
    if (used < 0) used += this._span;
    if (cap - used < n) {
      used = write - this._loadRead();
      if (used < 0) used += this._span;
    }
    if (cap - used < n) n = cap - used;
    if (this._rec !== 1) n -= n % this._rec;
    if (!(n > 0)) return 0;
    const slot = write < cap ? write : write - cap;
    const storage = this._storage;
    if (n < BULK) {
      // The common small case (single elements, parameter records) in one loop, no call.
      const src = elements as ArrayLike<number>;
      const dst = storage as Float64Array;
      for (let i = 0, k = slot; i < n; i++) {
        dst[k] = src[offset + i];
        if (++k === cap) k = 0;
      }
    } else {
      const first = cap - slot < n ? cap - slot : n;
      copy(elements, offset, storage, slot, first);
      if (first < n) copy(elements, offset + first, storage, 0, n - first);
    }
    // Inline rather than _advance(): this is the one hot line every push ends with.
    const next = write + n;
    Atomics.store(this._write, 0, (this._writePos = next >= this._span ? next - this._span : next));
    return n;
  }

  /**
   * Consumer: moves up to `length` elements out of the ring into `elements`, starting at
   * `offset`. Never blocks; returns how many were popped (0 when empty), rounded down to whole
   * records.
   *
   * ```js
   * const ring = new RingBuffer(RingBuffer.getStorageForCapacity(8, Float32Array), Float32Array);
   * ring.push(new Float32Array([1, 2, 3]));
   * const out = new Float32Array(8);
   * ring.pop(out, 2, 4); // 2: out[4] = 1, out[5] = 2
   * ```
   *
   * @param elements Where to put the values.
   * @param length The most to pop; default: as many as fit from `offset` to the end.
   * @param offset Index in `elements` where the first value goes; default 0.
   */
  pop(elements: TypedArray | (number | bigint)[], length?: number, offset = 0): number {
    const read = this._readPos;
    let n = elements.length - offset;
    if (length !== undefined && length < n) n = length;
    let used = this._writeCache - read;
    if (used < 0) used += this._span;
    if (used < n) {
      used = this._loadWrite() - read;
      if (used < 0) used += this._span;
    }
    if (used < n) n = used;
    if (this._rec !== 1) n -= n % this._rec;
    if (!(n > 0)) return 0;
    const cap = this._cap;
    const slot = read < cap ? read : read - cap;
    const storage = this._storage;
    if (n < BULK) {
      const src = storage as Float64Array;
      const dst = elements as Float64Array;
      for (let i = 0, k = slot; i < n; i++) {
        dst[offset + i] = src[k];
        if (++k === cap) k = 0;
      }
    } else {
      const first = cap - slot < n ? cap - slot : n;
      if (ArrayBuffer.isView(elements)) {
        const dst = elements as Float64Array;
        dst.set(this._view(slot, first) as Float64Array, offset);
        if (first < n) dst.set(this._view(0, n - first) as Float64Array, offset + first);
      } else {
        copy(storage, slot, elements, offset, first);
        if (first < n) copy(storage, 0, elements, offset + first, n - first);
      }
    }
    const next = read + n;
    Atomics.store(this._read, 0, (this._readPos = next >= this._span ? next - this._span : next));
    return n;
  }

  /**
   * Producer, zero-copy: lends the free space (at most `amount` elements) to `cb` as two
   * subarrays to fill in order, then publishes what the callback says it wrote. Creates two view
   * objects per call; on an audio thread prefer {@link RingBuffer.writeCallbackWithOffset}.
   *
   * Unlike ringbuf.js, a callback that returns 0 wrote nothing (returning nothing still means
   * "all of it").
   *
   * ```js
   * const ring = new RingBuffer(RingBuffer.getStorageForCapacity(256, Float32Array), Float32Array);
   * ring.writeCallback(128, (a, b) => {
   *   a.fill(0.5);
   *   b.fill(0.5);
   * }); // 128
   * ```
   *
   * @returns How many elements were published.
   */
  writeCallback(amount: number, cb: RingBufferCallback<T>): number {
    return this.writeCallbackWithOffset(amount, (storage, o1, n1, o2, n2) =>
      cb(storage.subarray(o1, o1 + n1) as T, storage.subarray(o2, o2 + n2) as T),
    );
  }

  /**
   * Producer, zero-copy and allocation-free: calls `cb(storage, offset1, count1, offset2,
   * count2)` with the free space (at most `amount` elements, whole records) as two runs of the
   * storage, then publishes what the callback says it wrote (all of it if it returns nothing).
   * `count2` is 0 unless the space wraps around the end.
   *
   * ```js
   * const ring = new RingBuffer(RingBuffer.getStorageForCapacity(256, Float32Array), Float32Array);
   * let phase = 0;
   * ring.writeCallbackWithOffset(128, (storage, o1, n1, o2, n2) => {
   *   for (let i = o1; i < o1 + n1; i++) storage[i] = Math.sin((phase += 0.05));
   *   for (let i = o2; i < o2 + n2; i++) storage[i] = Math.sin((phase += 0.05));
   * }); // 128
   * ```
   *
   * @returns How many elements were published.
   */
  writeCallbackWithOffset(amount: number, cb: RingBufferOffsetCallback<T>): number {
    const cap = this._cap;
    const write = this._writePos;
    let n = write - this._loadRead();
    if (n < 0) n += this._span;
    n = cap - n;
    if (amount < n) n = amount;
    if (this._rec !== 1) n -= n % this._rec;
    if (!(n > 0)) return 0;
    const slot = write < cap ? write : write - cap;
    const first = cap - slot < n ? cap - slot : n;
    const done = this._done(cb(this._storage, slot, first, 0, n - first), n);
    if (done > 0) Atomics.store(this._write, 0, (this._writePos = this._advance(write, done)));
    return done;
  }

  /**
   * Consumer, zero-copy: lends the readable elements (at most `amount`) to `cb` as two subarrays
   * in order, then releases as many as the callback says it read (all if it returns nothing).
   * Creates two view objects per call; on an audio thread prefer
   * {@link RingBuffer.readCallbackWithOffset}. ringbuf.js has no read-side callback.
   *
   * ```js
   * const ring = new RingBuffer(RingBuffer.getStorageForCapacity(64, Float32Array), Float32Array);
   * ring.push(new Float32Array([1, 2, 3]));
   * let sum = 0;
   * ring.readCallback(64, (a, b) => {
   *   for (const x of a) sum += x;
   *   for (const x of b) sum += x;
   * }); // 3, and sum is 6
   * ```
   *
   * @returns How many elements were consumed.
   */
  readCallback(amount: number, cb: RingBufferCallback<T>): number {
    return this.readCallbackWithOffset(amount, (storage, o1, n1, o2, n2) =>
      cb(storage.subarray(o1, o1 + n1) as T, storage.subarray(o2, o2 + n2) as T),
    );
  }

  /**
   * Consumer, zero-copy and allocation-free: calls `cb(storage, offset1, count1, offset2,
   * count2)` with the readable elements (at most `amount`, whole records) as two runs of the
   * storage, then releases as many as the callback says it read (all if it returns nothing).
   *
   * ```js
   * // In an AudioWorkletProcessor's process(): play what the ring holds, silence for the rest.
   * const ring = new RingBuffer(RingBuffer.getStorageForCapacity(512, Float32Array), Float32Array);
   * const out = new Float32Array(128); // outputs[0][0] in a worklet
   * const got = ring.readCallbackWithOffset(out.length, (s, o1, n1, o2, n2) => {
   *   for (let i = 0; i < n1; i++) out[i] = s[o1 + i];
   *   for (let i = 0; i < n2; i++) out[n1 + i] = s[o2 + i];
   * });
   * out.fill(0, got);
   * ```
   *
   * @returns How many elements were consumed.
   */
  readCallbackWithOffset(amount: number, cb: RingBufferOffsetCallback<T>): number {
    const read = this._readPos;
    let n = this._loadWrite() - read;
    if (n < 0) n += this._span;
    if (amount < n) n = amount;
    if (this._rec !== 1) n -= n % this._rec;
    if (!(n > 0)) return 0;
    const cap = this._cap;
    const slot = read < cap ? read : read - cap;
    const first = cap - slot < n ? cap - slot : n;
    const done = this._done(cb(this._storage, slot, first, 0, n - first), n);
    if (done > 0) Atomics.store(this._read, 0, (this._readPos = this._advance(read, done)));
    return done;
  }

  /** True when nothing is readable. Can be late on the producer side. */
  empty(): boolean {
    return this.availableRead() === 0;
  }

  /** True when no element can be pushed. Can be late on the consumer side. */
  full(): boolean {
    return this.availableWrite() === 0;
  }

  /**
   * How many elements can be popped now. Exact on the consumer side; on the producer side it
   * can lag behind pops that are under way.
   */
  availableRead(): number {
    return this._distance(Atomics.load(this._write, 0), Atomics.load(this._read, 0), 0);
  }

  /**
   * How many elements can be pushed now. Exact on the producer side; on the consumer side it
   * can lag behind pushes that are under way.
   */
  availableWrite(): number {
    const used = this._distance(Atomics.load(this._write, 0), Atomics.load(this._read, 0), this._cap);
    return this._cap - used;
  }

  /** ringbuf.js' old name for {@link RingBuffer.availableRead}. @deprecated */
  available_read(): number {
    return this.availableRead();
  }

  /** ringbuf.js' old name for {@link RingBuffer.availableWrite}. @deprecated */
  available_write(): number {
    return this.availableWrite();
  }

  /**
   * Elements between `read` and `write`, or `corrupt` when an index is outside the index space
   * or the distance exceeds the capacity: the other side scribbled on memory, and the caller
   * passes what keeps it off slots it does not own (the capacity for the producer: full; 0 for
   * the consumer: empty).
   */
  private _distance(write: number, read: number, corrupt: number): number {
    let d = write - read;
    if (d < 0) d += this._span;
    if (d > this._cap || write >= this._span || read >= this._span || write < 0 || read < 0) {
      return corrupt;
    }
    return d;
  }

  /**
   * A view of `n` storage slots from `slot`, for `TypedArray.set`. Views are kept in a small
   * direct-mapped cache, because a consumer popping blocks of one size visits the same few runs
   * again and again: after the first lap such pops create no object at all.
   */
  private _view(slot: number, n: number): T {
    const h = Math.imul(slot + 1, 0x9e3779b1) >>> (32 - VIEW_CACHE_BITS);
    const cached = this._views[h];
    if (cached !== null && this._viewSlots[h] === slot && cached.length === n) return cached;
    const view = this._storage.subarray(slot, slot + n) as T;
    this._views[h] = view;
    this._viewSlots[h] = slot;
    return view;
  }

  /**
   * Producer: refreshes the cached read index. A value no consumer could have written (outside
   * the index space, or more than the capacity behind us) means a peer scribbled on memory:
   * cache "full" instead, so we never overwrite slots we do not own.
   */
  private _loadRead(): number {
    const read = Atomics.load(this._read, 0);
    let used = this._writePos - read;
    if (used < 0) used += this._span;
    const ok = read >= 0 && read < this._span && used <= this._cap;
    return (this._readCache = ok ? read : this._advance(this._writePos, this._cap));
  }

  /** Consumer: refreshes the cached write index; a corrupt value caches "empty". */
  private _loadWrite(): number {
    const write = Atomics.load(this._write, 0);
    let used = write - this._readPos;
    if (used < 0) used += this._span;
    const ok = write >= 0 && write < this._span && used <= this._cap;
    return (this._writeCache = ok ? write : this._readPos);
  }

  /** `index + n` in the index space. */
  private _advance(index: number, n: number): number {
    const next = index + n;
    return next >= this._span ? next - this._span : next;
  }

  /** What a callback reports, clamped to `0 ..= offered` and rounded down to whole records. */
  private _done(reported: number | void, offered: number): number {
    if (reported === undefined) return offered;
    let n = Math.floor(Number(reported));
    if (!(n > 0)) return 0;
    if (n > offered) n = offered;
    return n - (n % this._rec);
  }
}

/**
 * Copies `n` elements; short runs by an element loop (no object created), long ones with
 * `TypedArray.set`. Mixed element types convert as by assignment.
 */
function copy(
  src: ArrayLike<number | bigint>,
  from: number,
  dst: TypedArray | (number | bigint)[],
  to: number,
  n: number,
): void {
  if (n >= BULK && ArrayBuffer.isView(src) && ArrayBuffer.isView(dst)) {
    const s = src as TypedArray;
    const d = dst as TypedArray;
    // Whole-array sources need no view; anything else costs one subarray object.
    const run = from === 0 && n === s.length ? s : s.subarray(from, from + n);
    (d as Float64Array).set(run as Float64Array, to);
    return;
  }
  // Typed storage accepts numbers or bigints by its kind; TypeScript cannot see that.
  const d = dst as Float64Array;
  const s = src as ArrayLike<number>;
  for (let i = 0; i < n; i++) d[to + i] = s[from + i];
}
