/**
 * 32-bit float WAV headers, laid out as `downbeat run --out` writes them: RIFF, a 28-byte
 * `JUNK` chunk reserved for RF64, `fmt ` (format 3, 18 bytes), `data`. When the data outgrows
 * RIFF's 4 GiB the same 82 bytes become an RF64 header (`ds64` in place of `JUNK`), so a
 * recording of any length is a valid file and the samples never move.
 *
 * @module
 */

/** Bytes before the first sample. */
export const WAV_HEADER_BYTES = 82;

const U32_MAX = 0xffff_ffff;

/**
 * The header of a 32-bit float WAV holding `frames` frames of `channels` channels.
 *
 * ```js
 * import { wavHeader, WAV_HEADER_BYTES } from "@downbeat/engine";
 * const header = wavHeader(2, 48000, 48000); // one second of stereo
 * header.length === WAV_HEADER_BYTES; // true
 * ```
 */
export function wavHeader(channels: number, sampleRate: number, frames: number): Uint8Array {
  const bytes = new Uint8Array(WAV_HEADER_BYTES);
  const v = new DataView(bytes.buffer);
  const ascii = (at: number, s: string) => {
    for (let i = 0; i < 4; i++) bytes[at + i] = s.charCodeAt(i);
  };
  const data = frames * channels * 4;
  const riff = WAV_HEADER_BYTES - 8 + data;
  const big = riff > U32_MAX;
  ascii(0, big ? "RF64" : "RIFF");
  v.setUint32(4, big ? U32_MAX : riff, true);
  ascii(8, "WAVE");
  ascii(12, big ? "ds64" : "JUNK");
  v.setUint32(16, 28, true);
  if (big) {
    setU64(v, 20, riff);
    setU64(v, 28, data);
    setU64(v, 36, frames);
    v.setUint32(44, 0, true); // no table
  }
  ascii(48, "fmt ");
  v.setUint32(52, 18, true);
  v.setUint16(56, 3, true); // IEEE float
  v.setUint16(58, channels, true);
  v.setUint32(60, sampleRate, true);
  v.setUint32(64, sampleRate * channels * 4, true);
  v.setUint16(68, channels * 4, true);
  v.setUint16(70, 32, true);
  v.setUint16(72, 0, true); // cbSize
  ascii(74, "data");
  v.setUint32(78, big ? U32_MAX : data, true);
  return bytes;
}

function setU64(v: DataView, at: number, n: number): void {
  v.setUint32(at, n % 0x1_0000_0000, true);
  v.setUint32(at + 4, Math.floor(n / 0x1_0000_0000), true);
}

/** A whole 32-bit float WAV file from planar channels (e.g. an `AudioBuffer`'s). */
export function encodeWav(channels: Float32Array[], sampleRate: number): Uint8Array {
  const ch = channels.length;
  const frames = ch === 0 ? 0 : channels[0].length;
  const out = new Uint8Array(WAV_HEADER_BYTES + frames * ch * 4);
  out.set(wavHeader(ch, sampleRate, frames));
  const samples = new DataView(out.buffer, WAV_HEADER_BYTES);
  for (let f = 0, at = 0; f < frames; f++) {
    for (let c = 0; c < ch; c++, at += 4) samples.setFloat32(at, channels[c][f], true);
  }
  return out;
}

/** A decoded 32-bit float WAV: its format and planar samples. */
export interface DecodedWav {
  sampleRate: number;
  channels: Float32Array[];
  frames: number;
}

/**
 * Reads a 32-bit float WAV (RIFF or RF64, format 3 or extensible), as Downbeat and this package
 * write them.
 *
 * @throws Error saying what is wrong with the file.
 */
export function decodeWav(file: Uint8Array): DecodedWav {
  const v = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const tag = (at: number) => String.fromCharCode(file[at], file[at + 1], file[at + 2], file[at + 3]);
  if (file.length < 12 || (tag(0) !== "RIFF" && tag(0) !== "RF64") || tag(8) !== "WAVE") {
    throw new Error("not a WAV file (no RIFF/RF64 WAVE header)");
  }
  let at = 12;
  let channels = 0;
  let sampleRate = 0;
  let bits = 0;
  let format = 0;
  let ds64Data = -1;
  while (at + 8 <= file.length) {
    const id = tag(at);
    let size = v.getUint32(at + 4, true);
    const body = at + 8;
    if (id === "ds64") ds64Data = v.getUint32(body + 8, true) + v.getUint32(body + 12, true) * 0x1_0000_0000;
    if (id === "fmt ") {
      format = v.getUint16(body, true);
      channels = v.getUint16(body + 2, true);
      sampleRate = v.getUint32(body + 4, true);
      bits = v.getUint16(body + 14, true);
      if (format === 0xfffe) format = v.getUint16(body + 24, true);
    }
    if (id === "data") {
      if (size === U32_MAX && ds64Data >= 0) size = ds64Data;
      if (format !== 3 || bits !== 32) {
        throw new Error(`not 32-bit float samples (format ${format}, ${bits} bits)`);
      }
      const frames = Math.floor(Math.min(size, file.length - body) / (4 * channels));
      const out = Array.from({ length: channels }, () => new Float32Array(frames));
      for (let f = 0, p = body; f < frames; f++) {
        for (let c = 0; c < channels; c++, p += 4) out[c][f] = v.getFloat32(p, true);
      }
      return { sampleRate, channels: out, frames };
    }
    at = body + size + (size & 1);
  }
  throw new Error("the WAV file has no data chunk");
}
