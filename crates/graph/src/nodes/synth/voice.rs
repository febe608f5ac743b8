//! One voice of the synth: oscillator, envelope and filter, and the slot a stolen voice
//! fades out in.

use super::envelope::{Adsr, Envelope, Stage};
use super::filter::{Lowpass, LowpassCoefs};
use super::wavetable::{table_for, Wave, Wavetables, SIZE};
use crate::note::note_to_hz;

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
    /// Oscillator phase in cycles, `0..1`.
    phase: f64,
    /// Phase increment per sample.
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
        phase: 0.0,
        inc: 0.0,
        table: None,
        env: Envelope::IDLE,
        filter: Lowpass::ZERO,
        coefs: LowpassCoefs::UNSET,
    };

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
        self.phase = 0.0;
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
        let velocity = self.velocity;
        let mut gain = gain;
        let mut phase = self.phase;
        let inc = self.inc;
        for o in out.iter_mut() {
            // Advance first: a note's first sample reads the wave one step past phase 0,
            // where every waveform is 0, so the note is audible from its own frame.
            phase += inc;
            if phase >= 1.0 {
                phase -= 1.0;
            }
            let pos = phase * SIZE as f64;
            let i = pos as usize;
            let frac = (pos - i as f64) as f32;
            let a = table[i];
            let b = table[i + 1];
            let s = a + (b - a) * frac;
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
