/**
 * The shared memory layout (version 1), byte for byte the one `downbeat-ring` reads and writes:
 * see `docs/ring-layout.md` in the repository. Everything here is what both languages must agree
 * on; nothing else in the package knows an offset.
 *
 * @module
 */

/** Bytes before the storage: the header and the two index words, each on its own 128 bytes. */
export const HEADER_BYTES = 384;
/** Byte offset of the write index (u32, written by the producer only). */
export const WRITE_INDEX_OFFSET = 128;
/** Byte offset of the read index (u32, written by the consumer only). */
export const READ_INDEX_OFFSET = 256;
/** The bytes `DBRG` read as a little-endian u32. */
export const MAGIC = 0x47524244;
/** The layout version this package reads and writes. */
export const LAYOUT_VERSION = 1;
/** The largest capacity the layout allows, so that indices (`< 2 * capacity`) fit an `Int32Array`. */
export const MAX_CAPACITY = 2 ** 30;

/** A typed array the ring can hold: every standard one, 64-bit integers included. */
export type TypedArray =
  | Int8Array
  | Uint8Array
  | Uint8ClampedArray
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array;

/** The constructor of a {@link TypedArray}, such as `Float32Array`. */
export interface TypedArrayConstructor<T extends TypedArray = TypedArray> {
  new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): T;
  readonly BYTES_PER_ELEMENT: number;
  readonly name: string;
}

/**
 * Why a block of memory was refused; the same names as Rust's `LayoutError` variants, so an error
 * reads the same on both sides of a ring.
 */
export type RingLayoutErrorCode =
  | "Misaligned"
  | "TooSmall"
  | "BadMagic"
  | "UnsupportedVersion"
  | "ElementMismatch"
  | "BadCapacity"
  | "RecordMismatch"
  | "CorruptIndex";

/**
 * Thrown when memory does not hold a ring of the expected shape, or a ring cannot be laid out as
 * asked. `code` says which check failed; the message says what was found and what was expected.
 *
 * ```js
 * import { RingBuffer, RingLayoutError } from "@downbeat/ringbuf";
 * try {
 *   new RingBuffer(new SharedArrayBuffer(1024), Float32Array); // zeroed memory: no header
 * } catch (e) {
 *   console.assert(e instanceof RingLayoutError && e.code === "BadMagic");
 * }
 * ```
 */
export class RingLayoutError extends Error {
  /** Which check failed. */
  readonly code: RingLayoutErrorCode;

  /** Builds an error; the message is prefixed with the code. */
  constructor(code: RingLayoutErrorCode, message: string) {
    super(`${code}: ${message}`);
    this.name = "RingLayoutError";
    this.code = code;
  }
}

/** Element kind codes of the layout's table, keyed by typed array name. */
const KINDS: Record<string, number> = {
  Uint8Array: 1,
  Uint8ClampedArray: 1,
  Int8Array: 2,
  Uint16Array: 3,
  Int16Array: 4,
  Uint32Array: 5,
  Int32Array: 6,
  BigUint64Array: 7,
  BigInt64Array: 8,
  Float32Array: 9,
  Float64Array: 10,
};

const KIND_NAMES = [
  "opaque",
  "u8",
  "i8",
  "u16",
  "i16",
  "u32",
  "i32",
  "u64",
  "i64",
  "f32",
  "f64",
];

/**
 * The layout's element kind code for a typed array constructor (`Float32Array` is 9).
 * `Uint8ClampedArray` shares `Uint8Array`'s code: the bytes are the same.
 *
 * @throws TypeError for anything that is not a standard typed array constructor.
 */
export function elementKind(type: TypedArrayConstructor): number {
  const code = type && typeof type === "function" ? KINDS[type.name] : undefined;
  if (code === undefined) {
    throw new TypeError(
      `expected a typed array constructor such as Float32Array, got ${describe(type)}`,
    );
  }
  return code;
}

function describe(value: unknown): string {
  if (typeof value === "function") return value.name || "an anonymous function";
  return value === null ? "null" : typeof value;
}

function kindName(code: number): string {
  return KIND_NAMES[code] ?? `unknown kind ${code}`;
}

// The storage views use the host's byte order and the layout says little-endian. Every engine
// that runs on the Web today is little-endian; refuse to run anywhere else rather than garble.
if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
  throw new Error("@downbeat/ringbuf needs a little-endian host");
}

/** The layout's alignment rule for where a ring starts. */
function checkOffset(byteOffset: number): void {
  if (!Number.isInteger(byteOffset) || byteOffset < 0 || byteOffset % 8 !== 0) {
    throw new RingLayoutError(
      "Misaligned",
      `byte offset ${byteOffset} must be a non-negative multiple of 8`,
    );
  }
}

/** What a valid header says. */
export interface RingShape {
  /** Capacity in elements. */
  capacity: number;
  /** Elements per record (1 for a plain ring). */
  recordLength: number;
}

/** Bytes a ring of `capacity` elements of `type` occupies: the header plus the storage. */
export function bytesForCapacity(capacity: number, type: TypedArrayConstructor): number {
  return HEADER_BYTES + capacity * type.BYTES_PER_ELEMENT;
}

/**
 * Writes a fresh header (and zero indices) for a ring of `capacity` elements of `type` at
 * `byteOffset` in `buffer`, publishing the magic word last so that a side polling for it sees a
 * complete header. Storage contents are left as they are.
 *
 * @throws RingLayoutError when the ring does not fit or the arguments break the layout's rules.
 */
export function writeHeader(
  buffer: ArrayBufferLike,
  byteOffset: number,
  capacity: number,
  type: TypedArrayConstructor,
  recordLength = 1,
): void {
  const kind = elementKind(type);
  checkOffset(byteOffset);
  if (!Number.isInteger(capacity) || capacity < 0 || capacity > MAX_CAPACITY) {
    throw new RingLayoutError(
      "BadCapacity",
      `capacity ${capacity} must be an integer in 0..=${MAX_CAPACITY}`,
    );
  }
  if (!Number.isInteger(recordLength) || recordLength < 1 || capacity % recordLength !== 0) {
    throw new RingLayoutError(
      "BadCapacity",
      `record length ${recordLength} must be a positive integer dividing the capacity ${capacity}`,
    );
  }
  const need = bytesForCapacity(capacity, type);
  if (byteOffset + need > buffer.byteLength) {
    throw new RingLayoutError(
      "TooSmall",
      `a ring of ${capacity} ${type.name} elements needs ${need} bytes at offset ${byteOffset}, ` +
        `the buffer has ${buffer.byteLength - byteOffset}`,
    );
  }
  const words = new Int32Array(buffer, byteOffset, HEADER_BYTES / 4);
  Atomics.store(words, 0, 0); // unpublish first: re-initialising a live ring must not tear
  words.fill(0, 1);
  words[1] = LAYOUT_VERSION;
  words[2] = type.BYTES_PER_ELEMENT;
  words[3] = kind;
  words[4] = capacity;
  words[5] = recordLength;
  Atomics.store(words, 0, MAGIC);
}

/**
 * Checks the header at `byteOffset` in the order `docs/ring-layout.md` lists, against the
 * element `type` (and, if given, the record length) the caller expects.
 *
 * @throws RingLayoutError naming the first check that failed.
 */
export function readHeader(
  buffer: ArrayBufferLike,
  byteOffset: number,
  type: TypedArrayConstructor,
  expectRecordLength?: number,
): RingShape {
  const kind = elementKind(type);
  checkOffset(byteOffset);
  if (buffer.byteLength - byteOffset < HEADER_BYTES) {
    throw new RingLayoutError(
      "TooSmall",
      `${buffer.byteLength - byteOffset} bytes at offset ${byteOffset} cannot hold the ` +
        `${HEADER_BYTES}-byte header; allocate with RingBuffer.getStorageForCapacity`,
    );
  }
  const words = new Int32Array(buffer, byteOffset, HEADER_BYTES / 4);
  const magic = Atomics.load(words, 0) >>> 0;
  if (magic !== MAGIC) {
    throw new RingLayoutError(
      "BadMagic",
      `no ring header at offset ${byteOffset} (magic 0x${magic.toString(16)}, expected ` +
        `0x${MAGIC.toString(16)}); allocate with RingBuffer.getStorageForCapacity, or ` +
        `RingBuffer.initialize memory you own`,
    );
  }
  const version = words[1];
  if (version !== LAYOUT_VERSION) {
    throw new RingLayoutError(
      "UnsupportedVersion",
      `layout version ${version}, this package reads ${LAYOUT_VERSION}`,
    );
  }
  const size = words[2];
  const foundKind = words[3];
  const knownSize = [0, 1, 1, 2, 2, 4, 4, 8, 8, 4, 8][foundKind];
  if (knownSize === undefined || foundKind === 0 || knownSize !== size) {
    throw new RingLayoutError(
      "ElementMismatch",
      `header holds ${kindName(foundKind)} with element size ${size}, which do not agree`,
    );
  }
  const capacity = words[4] >>> 0;
  const recordLength = words[5] >>> 0;
  if (capacity > MAX_CAPACITY || recordLength < 1 || capacity % recordLength !== 0) {
    throw new RingLayoutError(
      "BadCapacity",
      `capacity ${capacity} with record length ${recordLength}`,
    );
  }
  if (byteOffset + HEADER_BYTES + capacity * size > buffer.byteLength) {
    throw new RingLayoutError(
      "TooSmall",
      `storage of ${capacity} elements runs past the end of the buffer`,
    );
  }
  if (foundKind !== kind) {
    throw new RingLayoutError(
      "ElementMismatch",
      `the ring holds ${kindName(foundKind)}, not ${type.name} (${kindName(kind)})`,
    );
  }
  if (expectRecordLength !== undefined && recordLength !== expectRecordLength) {
    throw new RingLayoutError(
      "RecordMismatch",
      `the ring's records are ${recordLength} elements long, expected ${expectRecordLength}`,
    );
  }
  const write = Atomics.load(new Int32Array(buffer, byteOffset + WRITE_INDEX_OFFSET, 1), 0);
  const read = Atomics.load(new Int32Array(buffer, byteOffset + READ_INDEX_OFFSET, 1), 0);
  const span = 2 * capacity;
  const bad = (i: number) => (capacity === 0 ? i !== 0 : i < 0 || i >= span);
  let used = write - read;
  if (used < 0) used += span;
  if (bad(write) || bad(read) || used > capacity) {
    throw new RingLayoutError(
      "CorruptIndex",
      `write index ${write}, read index ${read} for capacity ${capacity}`,
    );
  }
  return { capacity, recordLength };
}
