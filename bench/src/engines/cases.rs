//! The workloads, described once; each engine's writer turns them into its own score.
//!
//! Every case is mono at [`SAMPLE_RATE`] in blocks of [`BLOCK`] frames, and every case but
//! `chain` has one louder "lead" tone so that all engines' spectra must peak at the same
//! frequency.

/// Sample rate of every engine.
pub const SAMPLE_RATE: u32 = 48_000;
/// Block size of every engine that has one (Web Audio's render quantum is fixed at 128).
pub const BLOCK: u32 = 64;
/// Voices per MIDI note in `voices`: one per MIDI channel.
pub const CHANNELS: usize = 16;
/// The synth's settings the rivals copy (Downbeat's `synth` defaults, with a lower `amp`
/// so that hundreds of voices stay near full scale).
pub const ATTACK: f64 = 0.002;
pub const DECAY: f64 = 0.3;
pub const SUSTAIN: f64 = 0.7;
pub const RELEASE: f64 = 0.08;
pub const CUTOFF: f64 = 5000.0;
pub const RESONANCE: f64 = 0.707;
pub const KEY_TRACK: f64 = 0.5;
pub const VEL_TRACK: f64 = 1.0;
pub const VOICE_AMP: f64 = 0.02;
/// Downbeat's envelope curves: decay and release cover `1 - 1e-3` of the way to a goal just
/// beyond their target, which is SuperCollider's segment curve `ln(1e-3)`.
pub const CURVE: f64 = 1e-3;
/// The fanin case's filters.
pub const FANIN_CUTOFF: f64 = 2000.0;
pub const FANIN_Q: f64 = 0.707;
/// Stages (a low-pass then a gain) per fanin branch.
pub const FANIN_DEPTH: usize = 8;

/// Which workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `n` sine oscillators summed.
    Sines,
    /// `n` saw voices through a resonant low-pass with an ADSR.
    Voices,
    /// Noise through `n` gains in series.
    Chain,
    /// `n` parallel branches: a sine through [`FANIN_DEPTH`] low-pass and gain stages.
    Fanin,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sines => "sines",
            Kind::Voices => "voices",
            Kind::Chain => "chain",
            Kind::Fanin => "fanin",
        }
    }
}

/// One workload at one size and length.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub kind: Kind,
    pub n: usize,
    pub seconds: f64,
}

impl Case {
    /// Frames every engine renders.
    pub fn frames(&self) -> usize {
        (self.seconds * f64::from(SAMPLE_RATE)).round() as usize
    }

    /// The frequency every engine's spectrum must peak at, if the case has a pitch.
    pub fn lead_hz(&self) -> Option<f64> {
        match self.kind {
            Kind::Sines => Some(440.0),
            Kind::Voices => Some(note_hz(voice(0).note)),
            Kind::Chain => None,
            Kind::Fanin => Some(branch(0).0),
        }
    }
}

/// Sine `i` of `sines`: frequency in Hz and amplitude. Every frequency is a whole number of
/// Hz, distinct from every other, so that the check of each engine's output finds each
/// sine in its own bin of a one-second spectrum at its level
/// ([`missing_tones`](super::signal::missing_tones)).
pub fn sine(i: usize) -> (f64, f64) {
    if i == 0 {
        (440.0, 0.1)
    } else {
        // Spread over the band on a 17 Hz grid from 67 Hz (1,000 sines reach 17,033 Hz),
        // never on the lead's frequency: 440 is not 50 plus a multiple of 17.
        (50.0 + 17.0 * i as f64, 0.001)
    }
}

/// One voice of `voices`.
#[derive(Clone, Copy, Debug)]
pub struct Voice {
    pub channel: u8,
    pub note: u8,
    /// MIDI velocity.
    pub velocity: u8,
}

impl Voice {
    pub fn hz(&self) -> f64 {
        note_hz(self.note)
    }

    /// Velocity as the synth reads it, `0..=1`.
    pub fn level(&self) -> f64 {
        f64::from(self.velocity) / 127.0
    }

    /// The filter cutoff Downbeat's synth gives this note: key and velocity tracking.
    pub fn cutoff(&self) -> f64 {
        let octaves =
            KEY_TRACK * (f64::from(self.note) - 60.0) / 12.0 - VEL_TRACK * (1.0 - self.level());
        (CUTOFF * octaves.exp2()).clamp(1.0, 0.45 * f64::from(SAMPLE_RATE))
    }

    /// The voice's gain: velocity times the synth's `amp`.
    pub fn gain(&self) -> f64 {
        self.level() * VOICE_AMP
    }
}

/// Voice `i`: sixteen voices (one per MIDI channel) per note from C3 up; the first note at
/// full velocity, the others softer, so its fundamental is the spectrum's peak.
pub fn voice(i: usize) -> Voice {
    let k = i / CHANNELS;
    Voice {
        channel: (i % CHANNELS) as u8,
        note: 48 + k as u8,
        velocity: if k == 0 { 127 } else { 51 },
    }
}

/// Harmonics in the band-limited saw Downbeat's synth plays at `hz`: its wavetables hold
/// one set of harmonics per half octave (`graph::nodes::synth::wavetable`), table `j`
/// holding every harmonic below `2^(j/2)`.
pub fn saw_harmonics(hz: f64) -> usize {
    let inc = hz / f64::from(SAMPLE_RATE);
    let harmonics = |j: usize| {
        let top = (j as f64 / 2.0).exp2();
        let below = if top.fract() == 0.0 {
            top as usize - 1
        } else {
            top.floor() as usize
        };
        below.max(1)
    };
    let mut j = (((0.5 / inc).log2() * 2.0).floor() as usize).min(20);
    while j > 0 && harmonics(j) as f64 * inc >= 0.5 {
        j -= 1;
    }
    harmonics(j)
}

pub fn note_hz(note: u8) -> f64 {
    440.0 * ((f64::from(note) - 69.0) / 12.0).exp2()
}

/// Amplitude of `chain`'s uniform noise (`-amp..amp`).
pub const NOISE_AMP: f64 = 0.5;

/// Every gain of a `chain` of `n`: together they halve the level, so no stage is a no-op an
/// engine could skip, and an engine that skipped them all would fail the RMS check.
pub fn chain_gain(n: usize) -> f64 {
    0.5f64.powf(1.0 / n as f64)
}

/// Branch `b` of `fanin`: its sine's frequency and amplitude (branch 0 is the lead).
pub fn branch(b: usize) -> (f64, f64) {
    (200.0 + 37.0 * b as f64, if b == 0 { 0.1 } else { 0.02 })
}

/// Gain of stage `s` of a fanin branch: 2 and 0.5 in turn (the stages alter the level only
/// through their filters' response).
pub fn fanin_gain(s: usize) -> f64 {
    if s % 2 == 0 {
        2.0
    } else {
        0.5
    }
}
