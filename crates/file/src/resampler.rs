//! [`Resampler`]: band-limited streaming sample-rate conversion with varispeed, allocation-free
//! after construction, keeping the time origin.

use crate::kernel::Kernel;
use crate::FileError;

/// The slowest [`Resampler::set_speed`] accepts (two octaves down).
pub const MIN_SPEED: f64 = 0.25;
/// The fastest [`Resampler::set_speed`] accepts (two octaves up).
pub const MAX_SPEED: f64 = 4.0;
/// The largest ratio between the two rates, either way, that [`Resampler::new`] accepts.
pub const MAX_RATIO: u32 = 8;
/// The most channels a [`Resampler`] (and [`decode_all`](crate::decode_all)) handles.
pub const MAX_CHANNELS: usize = 64;

/// Input frames held beyond the filter's window, so that input is copied in batches.
const CHUNK: usize = 1024;
/// Phases tabulated per input sample at least (more when the exact ratio needs them).
const MIN_ROWS: u64 = 1024;
/// Beyond this many exact phases, the table holds `INTERPOLATED_ROWS` and interpolates.
const MAX_EXACT_ROWS: u64 = 8192;
const INTERPOLATED_ROWS: u64 = 4096;

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A band-limited streaming resampler for interleaved `f32` audio, with varispeed.
///
/// **Time origin.** Output frame *n* is the input signal at time *n* / `to_rate` seconds (times
/// the speed, while varispeed is used): frame 0 of the output is input frame 0, with no whole
/// or fractional filter delay left in, as `sox … rate` does. The filter looks ahead: to write
/// output frame *n* it needs the input up to about *n* · `from_rate` / `to_rate` plus half the
/// filter's length; [`input_needed`](Resampler::input_needed) says how much. Input before frame
/// 0 is silence; to get the last output frames of a stream, feed silence after its end (as
/// [`decode_all`](crate::decode_all) does).
///
/// **Filter.** A Kaiser-windowed sinc (designed for 130 dB attenuation) with its cut-off at half
/// the lower rate and a transition band 9 % of the lower rate wide, tabulated for every exact
/// phase of the rate ratio (160 phases × 7 for 44.1 → 48 kHz), so at speed 1 no coefficient is
/// interpolated. **Measured quality** (`tests/quality.rs`): a logarithmic sweep from 20 Hz to
/// 20 kHz at 44.1 kHz, made analytically in `f64`, resampled to 48 kHz and subtracted from the
/// same analytic sweep evaluated at the output times `n / 48000`: everything that is not the
/// sweep (pass-band ripple, images, aliasing, rounding) is more than 100 dB below the sweep's
/// RMS; likewise 48 → 44.1 kHz and 44.1 → 96 kHz. Under varispeed the
/// phase is interpolated linearly between tabulated rows, and the cut-off stays where it was
/// designed: speeding up by `s` aliases input content above `to_rate / (2 s)`.
///
/// **Real time.** [`new`](Resampler::new) allocates the table and a buffer; after that,
/// [`process`](Resampler::process), [`set_speed`](Resampler::set_speed),
/// [`input_needed`](Resampler::input_needed) and [`reset`](Resampler::reset) never allocate,
/// free, lock or make a system call (`tests/guard.rs` runs them under the guard).
///
/// ```
/// use downbeat_file::Resampler;
///
/// let mut r = Resampler::new(1, 44_100, 48_000).unwrap();
/// let input: Vec<f32> = (0..44_100).map(|i| (i as f32 * 0.01).sin()).collect();
/// let mut output = vec![0.0; 48_000];
/// let need = r.input_needed(480);
/// let (used, written) = r.process(&input[..need], &mut output[..480]);
/// assert_eq!((used, written), (need, 480));
/// // Frame 0 of the output is input frame 0 (time 0), not delayed by the filter.
/// assert!((output[0] - input[0]).abs() < 1e-4);
/// ```
pub struct Resampler {
    channels: usize,
    from: u32,
    to: u32,
    kernel: Kernel,
    /// Table rows per `den`-th of an input sample, when the exact phases are tabulated.
    rows_per_step: Option<u64>,
    /// The ratio from / to as `step_int + step_num / den`.
    den: u64,
    step_int: u64,
    step_num: u64,
    /// Speed 1: the fractional position is `num / den` exactly.
    num: u64,
    /// Varispeed: the fractional position is `frac` and each output frame advances `vstep`.
    varispeed: bool,
    frac: f64,
    vstep: f64,
    speed: f64,
    /// Interleaved input history; frame `base` is the input frame at or just before the next
    /// output's time.
    buf: Vec<f32>,
    len: usize,
    cap: usize,
    base: usize,
}

impl Resampler {
    /// A resampler for `channels` interleaved channels from `from_rate` Hz to `to_rate` Hz.
    ///
    /// Errors: [`FileError::Rate`] when a rate is zero or the ratio is beyond [`MAX_RATIO`]
    /// either way; [`FileError::Channels`] for 0 or more than [`MAX_CHANNELS`] channels.
    /// Equal rates are fine (at speed 1 the output equals the input to within rounding).
    pub fn new(channels: usize, from_rate: u32, to_rate: u32) -> Result<Resampler, FileError> {
        let rate_error = |detail: &str| FileError::Rate {
            path: None,
            from: from_rate,
            to: to_rate,
            detail: detail.to_string(),
        };
        if channels == 0 || channels > MAX_CHANNELS {
            return Err(FileError::Channels {
                path: None,
                channels,
            });
        }
        if from_rate == 0 || to_rate == 0 {
            return Err(rate_error("a rate of 0 Hz"));
        }
        if u64::from(from_rate) > u64::from(to_rate) * u64::from(MAX_RATIO)
            || u64::from(to_rate) > u64::from(from_rate) * u64::from(MAX_RATIO)
        {
            return Err(rate_error(&format!(
                "the ratio is beyond {MAX_RATIO}:1 (the most this resampler converts)"
            )));
        }
        let (from, to) = (u64::from(from_rate), u64::from(to_rate));
        let g = gcd(from, to);
        let den = to / g;
        let step = from / g;
        let (rows, rows_per_step) = if den <= MAX_EXACT_ROWS {
            let k = MIN_ROWS.div_ceil(den);
            (den * k, Some(k))
        } else {
            (INTERPOLATED_ROWS, None)
        };
        // Compared rather than `f64::min` (clippy.toml): the same on every target.
        let ratio = to as f64 / from as f64;
        let scale = if ratio < 1.0 { ratio } else { 1.0 };
        let kernel = Kernel::new(scale, rows as usize);
        // Room for the window plus the furthest one output frame can jump at top speed.
        let max_jump = (MAX_SPEED * from as f64 / to as f64).ceil() as usize + 1;
        let cap = kernel.taps + CHUNK.max(4 * max_jump);
        let mut r = Resampler {
            channels,
            from: from_rate,
            to: to_rate,
            rows_per_step,
            den,
            step_int: step / den,
            step_num: step % den,
            num: 0,
            varispeed: false,
            frac: 0.0,
            vstep: 0.0,
            speed: 1.0,
            buf: vec![0.0; cap * channels],
            len: 0,
            cap,
            base: 0,
            kernel,
        };
        r.reset();
        Ok(r)
    }

    /// Channels per frame.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The input rate, in Hz.
    pub fn from_rate(&self) -> u32 {
        self.from
    }

    /// The output rate, in Hz.
    pub fn to_rate(&self) -> u32 {
        self.to
    }

    /// The filter's length in input frames (its look-ahead is half of it).
    pub fn taps(&self) -> usize {
        self.kernel.taps
    }

    /// The current speed.
    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// Varispeed: multiplies the rate ratio (speed 2 = an octave up and twice as fast, 0.5 = an
    /// octave down and half as fast), clamped to [`MIN_SPEED`]`..=`[`MAX_SPEED`]; a NaN is
    /// ignored. Takes effect from the next output frame, at the current position (no jump).
    /// Speed exactly 1 returns to exact rational stepping. Never allocates.
    pub fn set_speed(&mut self, speed: f64) {
        if speed.is_nan() {
            return;
        }
        let speed = speed.clamp(MIN_SPEED, MAX_SPEED);
        if speed == 1.0 {
            if self.varispeed {
                let mut num = (self.frac * self.den as f64).round() as u64;
                if num >= self.den {
                    num -= self.den;
                    self.base += 1;
                }
                self.num = num;
                self.varispeed = false;
            }
        } else {
            if !self.varispeed {
                self.frac = self.num as f64 / self.den as f64;
                self.varispeed = true;
            }
            self.vstep = speed * f64::from(self.from) / f64::from(self.to);
        }
        self.speed = speed;
    }

    /// Input frames that [`process`](Resampler::process) needs, beyond what it already holds,
    /// to write `out_frames` output frames now. Never allocates.
    pub fn input_needed(&self, out_frames: usize) -> usize {
        if out_frames == 0 {
            return 0;
        }
        let steps = (out_frames - 1) as u64;
        let last_base = if self.varispeed {
            // The same additions `advance` makes, so the count is exact.
            let mut frac = self.frac;
            let mut base = self.base as u64;
            for _ in 0..steps {
                frac += self.vstep;
                let whole = frac.floor();
                base += whole as u64;
                frac -= whole;
            }
            base
        } else {
            let total = self.num + steps * self.step_num;
            self.base as u64 + steps * self.step_int + total / self.den
        };
        let need = last_base as usize + self.kernel.half + 1;
        need.saturating_sub(self.len)
    }

    /// Forgets the history (after a seek): the next output frame is the next input frame, at
    /// time 0, with silence before it. Keeps the speed. Never allocates.
    pub fn reset(&mut self) {
        let half = self.kernel.half;
        self.buf[..(half - 1) * self.channels].fill(0.0);
        self.len = half - 1;
        self.base = half - 1;
        self.num = 0;
        self.frac = 0.0;
    }

    /// Reads interleaved `input` and writes interleaved `output`, as far as either goes;
    /// returns (input frames consumed, output frames written). Input frames consumed are kept
    /// inside, so the caller never passes them again: it may pass any amount, even more than
    /// [`input_needed`](Resampler::input_needed), and the rest of its slice is left for the next
    /// call. Never allocates, locks or makes a system call.
    ///
    /// # Panics
    /// If a slice's length is not a whole number of frames.
    pub fn process(&mut self, input: &[f32], output: &mut [f32]) -> (usize, usize) {
        let ch = self.channels;
        assert!(
            input.len() % ch == 0 && output.len() % ch == 0,
            "Resampler::process: slices must hold whole frames of {ch} channels"
        );
        let in_frames = input.len() / ch;
        let out_frames = output.len() / ch;
        let half = self.kernel.half;
        let (mut consumed, mut written) = (0, 0);
        loop {
            while written < out_frames && self.base + half < self.len {
                self.write_frame(&mut output[written * ch..(written + 1) * ch]);
                self.advance();
                written += 1;
            }
            if written == out_frames || consumed == in_frames {
                break;
            }
            if self.len == self.cap {
                self.compact();
            }
            let n = (self.cap - self.len).min(in_frames - consumed);
            self.buf[self.len * ch..(self.len + n) * ch]
                .copy_from_slice(&input[consumed * ch..(consumed + n) * ch]);
            self.len += n;
            consumed += n;
        }
        (consumed, written)
    }

    /// Drops the frames before the window, making room at the end.
    fn compact(&mut self) {
        let start = (self.base + 1 - self.kernel.half).min(self.len);
        let ch = self.channels;
        self.buf.copy_within(start * ch..self.len * ch, 0);
        self.len -= start;
        self.base -= start;
    }

    fn advance(&mut self) {
        if self.varispeed {
            self.frac += self.vstep;
            let whole = self.frac.floor();
            self.base += whole as usize;
            self.frac -= whole;
        } else {
            self.num += self.step_num;
            if self.num >= self.den {
                self.num -= self.den;
                self.base += 1;
            }
            self.base += self.step_int as usize;
        }
    }

    fn write_frame(&self, out: &mut [f32]) {
        let ch = self.channels;
        let taps = self.kernel.taps;
        let start = (self.base + 1 - self.kernel.half) * ch;
        let window = &self.buf[start..start + taps * ch];
        // The phase as a row of the table: exact when it falls on one, else between two.
        let (row, next, weight) = match (self.varispeed, self.rows_per_step) {
            (false, Some(k)) => ((self.num * k) as usize, 0, 0.0),
            (false, None) => {
                let x = self.num as f64 * self.kernel.rows as f64 / self.den as f64;
                let r = x.floor();
                (r as usize, r as usize + 1, x - r)
            }
            (true, _) => {
                let x = self.frac * self.kernel.rows as f64;
                let r = x.floor();
                (r as usize, r as usize + 1, x - r)
            }
        };
        dot(window, self.kernel.row(row), ch, out);
        if weight != 0.0 {
            // Linear interpolation between the two nearest tabulated phases, per channel.
            let w = weight as f32;
            let row2 = self.kernel.row(next);
            for (c, o) in out.iter_mut().enumerate() {
                let b = dot_channel(window, row2, ch, c);
                *o += w * (b - *o);
            }
        }
    }
}

/// `out[c] = Σ_j window[j·ch + c] · row[j]` for every channel `c`. Mono and stereo keep 8
/// partial sums (taps are a multiple of 8) so the compiler can use vector registers.
#[inline]
fn dot(window: &[f32], row: &[f32], ch: usize, out: &mut [f32]) {
    match ch {
        1 => {
            let mut acc = [0.0f32; 8];
            for (x, h) in window.chunks_exact(8).zip(row.chunks_exact(8)) {
                for k in 0..8 {
                    acc[k] += x[k] * h[k];
                }
            }
            out[0] = acc.iter().sum();
        }
        2 => {
            let mut acc = [0.0f32; 8];
            for (x, h) in window.chunks_exact(8).zip(row.chunks_exact(4)) {
                for k in 0..4 {
                    acc[2 * k] += x[2 * k] * h[k];
                    acc[2 * k + 1] += x[2 * k + 1] * h[k];
                }
            }
            out[0] = acc[0] + acc[2] + acc[4] + acc[6];
            out[1] = acc[1] + acc[3] + acc[5] + acc[7];
        }
        _ => {
            for (c, o) in out.iter_mut().enumerate() {
                *o = dot_channel(window, row, ch, c);
            }
        }
    }
}

#[inline]
fn dot_channel(window: &[f32], row: &[f32], ch: usize, c: usize) -> f32 {
    window
        .iter()
        .skip(c)
        .step_by(ch)
        .zip(row)
        .map(|(x, h)| x * h)
        .sum()
}
