//! One voice of the synth: oscillator, envelope and filter, and the slot a stolen voice
//! fades out in.

use super::{
    envelope::{Adsr, Envelope, Stage},
    filter::{Lowpass, LowpassCoefs},
    wavetable::{table_for, Wave, Wavetables, SIZE},
};
use crate::dsp::turns_to_phase;
use downbeat_graph::note_to_hz;

/// Bits of a `u32` phase below the table index: `2^32 / SIZE`.
const FRAC_BITS: u32 = 32 - SIZE.trailing_zeros();

/// The wave at `phase` (a fraction of a cycle, `2^32` = one turn), linearly interpolated
/// between the table's samples. Integer arithmetic down to the fraction, which has 20 bits
/// and so converts to `f32` exactly: no `f64`, nothing that drifts, vectorisable.
#[inline(always)]
fn read(table: &[f32; SIZE + 1], phase: u32) -> f32 {
    let i = (phase >> FRAC_BITS) as usize;
    let frac = (phase & ((1 << FRAC_BITS) - 1)) as i32 as f32 * (1.0 / (1 << FRAC_BITS) as f32);
    let (a, b) = (table[i], table[i + 1]);
    a + (b - a) * frac
}

/// Frames rendered at a time by [`render_lanes`]: the lanes' envelopes for them wait in an
/// array on the stack.
const CHUNK: usize = 64;

/// What a voice reads while rendering, shared by every voice of a synth.
pub(super) struct Shared<'a> {
    pub(super) tables: &'a Wavetables,
    pub(super) wave: Wave,
    pub(super) adsr: &'a Adsr,
}

/// One voice. `Copy`, so a stolen voice can be moved whole into a fade slot.
#[derive(Clone, Copy, Debug)]
pub(super) struct Voice {
    /// MIDI channel of the note.
    pub(super) channel: u8,
    /// Note number (fractional allowed).
    pub(super) note: f32,
    /// `0..=1`; also the voice's linear gain.
    pub(super) velocity: f32,
    /// The key is down (no note off yet).
    pub(super) key_down: bool,
    /// The key is up but the sustain pedal holds the note.
    pub(super) sustained: bool,
    /// Order of the note on, for stealing the oldest.
    pub(super) started: u64,
    /// Order of the release, for stealing the oldest released.
    pub(super) released: u64,
    /// Oscillator phase, `2^32` = one cycle.
    phase: u32,
    /// Phase increment per sample, `2^32` = one cycle.
    step: u32,
    /// Phase increment per sample in cycles (what `step` rounds), for the pitch.
    inc: f64,
    /// Wavetable index, `None` when the pitch is at or above half the sample rate.
    table: Option<usize>,
    env: Envelope,
    filter: Lowpass,
    coefs: LowpassCoefs,
}

impl Voice {
    pub(super) const IDLE: Voice = Voice {
        channel: 0,
        note: 0.0,
        velocity: 0.0,
        key_down: false,
        sustained: false,
        started: 0,
        released: 0,
        phase: 0,
        step: 0,
        inc: 0.0,
        table: None,
        env: Envelope::IDLE,
        filter: Lowpass::ZERO,
        coefs: LowpassCoefs::UNSET,
    };

    /// The oscillator plays below half the sample rate (else the voice is silent).
    #[inline]
    pub(super) fn audible(&self) -> bool {
        self.table.is_some()
    }

    /// The voice has finished its release (or never started).
    #[inline]
    pub(super) fn is_idle(&self) -> bool {
        self.env.is_idle()
    }

    /// The envelope is releasing.
    pub(super) fn is_releasing(&self) -> bool {
        self.env.stage() == Stage::Release
    }

    /// Has produced nothing yet: taking it over needs no fade.
    pub(super) fn is_silent(&self) -> bool {
        self.env.level() == 0.0
    }

    /// Starts a note from silence, with fresh oscillator and filter state.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start(
        &mut self,
        channel: u8,
        note: f32,
        velocity: f32,
        order: u64,
        adsr: &Adsr,
        bend: f64,
        sample_rate: f64,
    ) {
        self.channel = channel;
        self.note = note;
        self.velocity = velocity;
        self.key_down = true;
        self.sustained = false;
        self.started = order;
        self.released = 0;
        self.phase = 0;
        self.filter = Lowpass::ZERO;
        self.env.start(adsr);
        self.tune(bend, sample_rate);
    }

    /// Enters the release.
    pub(super) fn release(&mut self, order: u64, adsr: &Adsr) {
        self.key_down = false;
        self.sustained = false;
        self.released = order;
        self.env.release(adsr);
    }

    /// Sets the oscillator for the note bent by `bend` semitones.
    pub(super) fn tune(&mut self, bend: f64, sample_rate: f64) {
        self.inc = note_to_hz(f64::from(self.note) + bend) / sample_rate;
        self.step = turns_to_phase(self.inc);
        self.table = table_for(self.inc);
    }

    /// The pitch the oscillator plays, in Hz.
    pub(super) fn freq(&self, sample_rate: f64) -> f64 {
        self.inc * sample_rate
    }

    pub(super) fn set_coefs(&mut self, coefs: LowpassCoefs) {
        self.coefs = coefs;
    }

    /// Adds the voice into `out` with a gain ramp starting at `gain` and moving by `step`
    /// per sample (1 and 0 for a playing voice; a fade for a stolen one).
    #[inline]
    pub(super) fn render(&mut self, out: &mut [f32], shared: &Shared<'_>, gain: f32, step: f32) {
        let Some(j) = self.table else {
            // Too high to play below half the sample rate: silent, but the envelope keeps
            // time so the voice ends when it should.
            for _ in 0..out.len() {
                self.env.next(shared.adsr);
            }
            return;
        };
        let table = shared.tables.table(shared.wave, j);
        let table: &[f32; SIZE + 1] = table.try_into().expect("a table holds SIZE + 1 samples");
        let velocity = self.velocity;
        let mut gain = gain;
        let mut phase = self.phase;
        let phase_step = self.step;
        for o in out.iter_mut() {
            // Advance first: a note's first sample reads the wave one step past phase 0,
            // where every waveform is 0, so the note is audible from its own frame.
            phase = phase.wrapping_add(phase_step);
            let s = read(table, phase);
            let e = self.env.next(shared.adsr);
            let y = self.filter.tick(s, &self.coefs);
            *o += y * e * velocity * gain;
            gain += step;
            if self.env.is_idle() {
                break;
            }
        }
        self.phase = phase;
    }
}

/// Voices rendered side by side, one per lane: a voice's filter and envelope are each a
/// chain of dependent operations per sample, so one voice alone keeps the processor waiting
/// on latencies; four at a time fill those waits, and the filter's arithmetic becomes one
/// vector operation for all four.
pub(super) const LANES: usize = 4;

/// Adds the playing voices `voices[i]` for each `i` in `group` (at most [`LANES`], each
/// sounding and below half the sample rate) into `out`.
///
/// Every lane computes exactly what [`Voice::render`] computes for its voice, in the same
/// order of operations, and the lanes are added into each output sample in the order of
/// `group`, so the output is bit for bit what rendering the voices one after another gives.
/// (A voice that ends within the block adds `±0` from there on instead of stopping; its
/// oscillator and filter run on, unheard, until its next note resets them.)
pub(super) fn render_lanes(
    voices: &mut [Voice],
    group: &[usize],
    out: &mut [f32],
    shared: &Shared<'_>,
) {
    // The number of lanes added is a constant in each copy, so the adding is unrolled.
    match group.len() {
        1 => render_first::<1>(voices, group, out, shared),
        2 => render_first::<2>(voices, group, out, shared),
        3 => render_first::<3>(voices, group, out, shared),
        _ => render_first::<LANES>(voices, group, out, shared),
    }
}

/// [`render_lanes`] for the first `COUNT` lanes of `group`.
fn render_first<const COUNT: usize>(
    voices: &mut [Voice],
    group: &[usize],
    out: &mut [f32],
    shared: &Shared<'_>,
) {
    let group = &group[..COUNT];
    // Unused lanes repeat the first voice; their results are never added nor kept.
    let mut lane = [voices[group[0]]; LANES];
    for (l, &i) in group.iter().enumerate() {
        lane[l] = voices[i];
    }
    let tables: [&[f32; SIZE + 1]; LANES] = std::array::from_fn(|l| {
        shared
            .tables
            .table(shared.wave, lane[l].table.unwrap_or(0))
            .try_into()
            .expect("a table holds SIZE + 1 samples")
    });
    let mut phase: [u32; LANES] = std::array::from_fn(|l| lane[l].phase);
    let step: [u32; LANES] = std::array::from_fn(|l| lane[l].step);
    let velocity: [f32; LANES] = std::array::from_fn(|l| lane[l].velocity);
    let mut env: [Envelope; LANES] = std::array::from_fn(|l| lane[l].env);
    let mut filter = Lowpass::lanes(std::array::from_fn(|l| lane[l].filter));
    let coefs = LowpassCoefs::lanes(std::array::from_fn(|l| lane[l].coefs));
    let mut levels = [[0.0f32; CHUNK]; COUNT];
    for out in out.chunks_mut(CHUNK) {
        // Each lane's envelope first, a segment at a time, so the loop below is the same
        // straight-line code for every sample.
        for (l, e) in levels.iter_mut().enumerate() {
            env[l].fill(shared.adsr, &mut e[..out.len()]);
        }
        for (k, o) in out.iter_mut().enumerate() {
            let mut s = [0.0f32; LANES];
            for l in 0..LANES {
                // As in `Voice::render`: advance first, then read.
                phase[l] = phase[l].wrapping_add(step[l]);
                s[l] = read(tables[l], phase[l]);
            }
            let y = filter.tick(&s, &coefs);
            let mut acc = *o;
            for l in 0..COUNT {
                acc += y[l] * levels[l][k] * velocity[l];
            }
            *o = acc;
        }
    }
    let filters = filter.split();
    for (l, &i) in group.iter().enumerate() {
        let v = &mut voices[i];
        v.phase = phase[l];
        v.env = env[l];
        v.filter = filters[l];
    }
}

/// A stolen voice fading out: it keeps playing exactly as it would have, times a linear
/// fade to silence, while its slot already plays the new note.
#[derive(Clone, Copy, Debug)]
pub(super) struct Fade {
    pub(super) voice: Voice,
    gain: f32,
    step: f32,
    /// Samples left; 0 = free slot.
    pub(super) remaining: u32,
}

impl Fade {
    pub(super) const FREE: Fade = Fade {
        voice: Voice::IDLE,
        gain: 0.0,
        step: 0.0,
        remaining: 0,
    };

    /// Starts fading `voice` out over `samples` samples.
    pub(super) fn start(&mut self, voice: Voice, samples: u32) {
        self.voice = voice;
        self.gain = 1.0;
        self.step = -1.0 / samples as f32;
        self.remaining = samples;
    }

    /// Adds the fading voice into `out` (as much of it as is left).
    pub(super) fn render(&mut self, out: &mut [f32], shared: &Shared<'_>) {
        if self.remaining == 0 {
            return;
        }
        let n = out.len().min(self.remaining as usize);
        // The ramp's first sample is one step below 1, its last exactly reaches 0.
        let first = self.gain + self.step;
        self.voice.render(&mut out[..n], shared, first, self.step);
        self.gain += self.step * n as f32;
        self.remaining -= n as u32;
        if self.voice.is_idle() {
            self.remaining = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{super::wavetable::wavetables, *};

    /// Seven voices in every stage of their envelopes, one of them ending mid-block,
    /// rendered four at a time and one after another: the same bits.
    #[test]
    fn lanes_render_the_bits_of_one_voice_after_another() {
        let sr = 48_000.0;
        let adsr = Adsr::new(0.001, 0.002, 0.5, 0.0015, sr);
        let tables = wavetables();
        let shared = Shared {
            tables,
            wave: Wave::Saw,
            adsr: &adsr,
        };
        let mut voices = [Voice::IDLE; 7];
        for (i, v) in voices.iter_mut().enumerate() {
            v.start(
                0,
                40.0 + 7.0 * i as f32,
                0.3 + 0.1 * i as f32,
                i as u64,
                &adsr,
                0.0,
                sr,
            );
            v.set_coefs(LowpassCoefs::new(
                500.0 + 900.0 * i as f64,
                0.5 + i as f64,
                sr,
            ));
        }
        let mut lanes = voices;
        let mut one_by_one = voices;
        let (mut a, mut b) = (vec![0.0f32; 64], vec![0.0f32; 64]);
        for block in 0..12 {
            if block == 3 {
                // Releases of 72 samples: voices 2 and 5 end in block 4.
                for i in [2, 5] {
                    lanes[i].release(1, &adsr);
                    one_by_one[i].release(1, &adsr);
                }
            }
            a.fill(0.0);
            b.fill(0.0);
            let playing: Vec<usize> = (0..7).filter(|&i| !lanes[i].is_idle()).collect();
            for group in playing.chunks(LANES) {
                render_lanes(&mut lanes, group, &mut a, &shared);
            }
            for v in one_by_one.iter_mut().filter(|v| !v.is_idle()) {
                v.render(&mut b, &shared, 1.0, 0.0);
            }
            assert!(a.iter().any(|&x| x != 0.0));
            let (a_bits, b_bits): (Vec<u32>, Vec<u32>) = (
                a.iter().map(|x| x.to_bits()).collect(),
                b.iter().map(|x| x.to_bits()).collect(),
            );
            assert_eq!(a_bits, b_bits, "block {block}");
        }
        assert!(lanes[2].is_idle() && lanes[5].is_idle() && !lanes[0].is_idle());
    }
}
