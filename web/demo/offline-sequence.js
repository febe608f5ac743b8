// The deterministic test signal of the offline check, shared by the Worker that feeds the ring
// and the page that checks the render: xorshift32, 24 bits per sample, k / 2^23 - 1. Every value
// is exactly representable in a float32, so "sample-exact" means bit-for-bit equal.

/** A generator of the sequence from `seed` (a nonzero u32): call it for each next sample. */
export function sequence(seed) {
  let x = seed | 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 8) / 8388608 - 1;
  };
}

/** The first `frames` samples of the sequence from `seed`. */
export function expected(seed, frames) {
  const next = sequence(seed);
  const out = new Float32Array(frames);
  for (let i = 0; i < frames; i++) out[i] = next();
  return out;
}
