// Pitch of a window of audio by autocorrelation, for the demo pages' "pitch heard" readouts and
// the browser tests that check a note sounds at its pitch. Searches 30 Hz .. 4.3 kHz.

/**
 * The fundamental of `data` (samples at `rate` Hz) in Hz, or 0 for silence. The window should
 * hold a few periods of the lowest pitch wanted (4096 samples at 48 kHz: down to about 47 Hz).
 */
export function detectPitch(data, rate) {
  const minLag = Math.floor(rate / 4300);
  const maxLag = Math.min(data.length >> 1, Math.ceil(rate / 30));
  let energy = 0;
  for (let i = 0; i < data.length; i++) energy += data[i] * data[i];
  if (energy / data.length < 1e-8) return 0;
  const n = data.length - maxLag;
  const r = new Float32Array(maxLag + 2);
  for (let lag = 0; lag <= maxLag + 1; lag++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += data[i] * data[i + lag];
    r[lag] = sum;
  }
  // The first lag after the first dip whose correlation is within 10 % of the best: the period,
  // not a multiple of it.
  let lag = minLag;
  while (lag < maxLag && r[lag] > r[lag + 1]) lag++;
  let best = lag;
  for (let l = lag; l <= maxLag; l++) if (r[l] > r[best]) best = l;
  let pick = best;
  for (let l = lag; l <= maxLag; l++) {
    if (r[l] >= 0.9 * r[best] && r[l] >= r[l - 1] && r[l] >= r[l + 1]) {
      pick = l;
      break;
    }
  }
  if (r[pick] <= 0) return 0;
  const a = r[pick - 1];
  const b = r[pick];
  const c = r[pick + 1];
  const d = a - 2 * b + c;
  const shift = d !== 0 ? (0.5 * (a - c)) / d : 0;
  return rate / (pick + shift);
}
