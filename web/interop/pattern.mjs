// The deterministic sequences of the interop tests: element `i` is a pure function of `i`, so a
// receiver verifies every element without being told what was sent. This is the twin of
// crates/ring-wasm/src/pattern.rs and must compute exactly the same values.

/**
 * Sample `i` of the f32 sequence: 24 hashed bits of `i`, centred on zero, scaled by 2^-8. Exact
 * in f32, never NaN, both signs, fractional parts.
 */
export function sample(i) {
  return ((Math.imul(i, 0x9e3779b1) >>> 8) - 8388608) / 256;
}

/** Parameter id of record `i`: a full 32-bit hash. */
export function paramId(i) {
  return (Math.imul(i, 0x85ebca6b) ^ 0xdb5eed00) >>> 0;
}

/** Record `i` of the parameter sequence: `{ index, value, frame }` as ParameterReader gives it. */
export function param(i) {
  return { index: paramId(i), value: sample(i), frame: i >>> 0 };
}

/**
 * Channel `channel` of frame `frame` of the interleaved audio sequence: sample
 * `frame + channel * 0x6A09E667` (mod 2^32) of the f32 sequence. Depends on the frame and the
 * channel only, never on the channel count; channel 0 is the f32 sequence itself.
 */
export function audio(frame, channel) {
  return sample((frame + Math.imul(channel, 0x6a09e667)) >>> 0);
}

/** The bits of an f32, for messages. */
export function f32Bits(x) {
  const f = new Float32Array([x]);
  return "0x" + new Uint32Array(f.buffer)[0].toString(16).padStart(8, "0");
}

/** `0x`-prefixed 8-digit hex of a u32. */
export function hex(x) {
  return "0x" + (x >>> 0).toString(16).padStart(8, "0");
}
