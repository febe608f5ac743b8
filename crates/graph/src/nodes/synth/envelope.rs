//! The ADSR envelope of one voice.
//!
//! Attack is a straight line from silence to full level. Decay and release are exponential
//! curves (the way a struck or released string dies away) that nevertheless end exactly
//! on time: each segment aims at a goal slightly beyond its target, so the curve meets the
//! target after the segment's duration, and a sample counter ends the segment there. A
//! release therefore lasts exactly its time, to the sample, which is what lets a run end at
//! "last note off plus longest release".

/// How far past its target an exponential segment aims: the curve covers `1 - CURVE` of
/// the distance to its goal by the end of the segment (`e^-ln(1000)`, i.e. it has the shape
/// of a decay to -60 dB, cut off where it meets the target).
const CURVE: f64 = 1e-3;

/// Seconds over which the sustain level follows a change of the `sustain` parameter.
const SUSTAIN_GLIDE: f64 = 0.005;

/// The envelope's times in samples and its sustain level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Adsr {
    attack: u32,
    decay: u32,
    sustain: f32,
    release: u32,
    glide: f32,
}

impl Adsr {
    /// Times in seconds, `sustain` in `0..=1`, at `sample_rate`. Every time is at least one
    /// sample.
    pub(super) fn new(
        attack: f64,
        decay: f64,
        sustain: f64,
        release: f64,
        sample_rate: f64,
    ) -> Self {
        let samples = |t: f64| ((t * sample_rate).round() as u32).max(1);
        Self {
            attack: samples(attack),
            decay: samples(decay),
            sustain: sustain as f32,
            release: samples(release),
            glide: (1.0 - (-1.0 / (SUSTAIN_GLIDE * sample_rate)).exp()) as f32,
        }
    }

    /// Changes the attack time (seconds); notes already in their attack keep their slope.
    pub(super) fn set_attack(&mut self, seconds: f64, sample_rate: f64) {
        self.attack = ((seconds * sample_rate).round() as u32).max(1);
    }

    /// Changes the decay time (seconds) for decays that start from now on.
    pub(super) fn set_decay(&mut self, seconds: f64, sample_rate: f64) {
        self.decay = ((seconds * sample_rate).round() as u32).max(1);
    }

    /// Changes the release time (seconds) for releases that start from now on.
    pub(super) fn set_release(&mut self, seconds: f64, sample_rate: f64) {
        self.release = ((seconds * sample_rate).round() as u32).max(1);
    }

    /// Changes the sustain level; held notes glide to it over 5 ms.
    pub(super) fn set_sustain(&mut self, level: f32) {
        self.sustain = level;
    }

    /// Release time in samples.
    pub(super) fn release_samples(&self) -> u32 {
        self.release
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    Idle,
    Attack,
    Decay,
    Sustain,
    Release,
}

/// One voice's envelope state.
#[derive(Clone, Copy, Debug)]
pub(super) struct Envelope {
    stage: Stage,
    level: f32,
    /// Per-sample update `level = mul · level + add` of the current exponential segment,
    /// or the step of the attack line (in `add`).
    mul: f32,
    add: f32,
    /// Samples into the current segment, and its length.
    count: u32,
    length: u32,
    /// Where the current segment ends.
    target: f32,
}

impl Envelope {
    pub(super) const IDLE: Envelope = Envelope {
        stage: Stage::Idle,
        level: 0.0,
        mul: 1.0,
        add: 0.0,
        count: 0,
        length: 0,
        target: 0.0,
    };

    /// Current level, `0..=1`.
    #[inline]
    pub(super) fn level(&self) -> f32 {
        self.level
    }

    pub(super) fn stage(&self) -> Stage {
        self.stage
    }

    /// True once the release has reached silence (or before any note).
    #[inline]
    pub(super) fn is_idle(&self) -> bool {
        self.stage == Stage::Idle
    }

    /// Starts from silence.
    pub(super) fn start(&mut self, adsr: &Adsr) {
        self.level = 0.0;
        self.stage = Stage::Attack;
        self.mul = 1.0;
        self.add = 1.0 / adsr.attack as f32;
        self.count = 0;
        self.length = adsr.attack;
        self.target = 1.0;
    }

    /// Starts the release from the current level.
    pub(super) fn release(&mut self, adsr: &Adsr) {
        if self.stage == Stage::Idle || self.stage == Stage::Release {
            return;
        }
        self.enter_exponential(Stage::Release, 0.0, adsr.release);
    }

    /// An exponential segment from the current level to `target` over `samples` samples.
    fn enter_exponential(&mut self, stage: Stage, target: f32, samples: u32) {
        let from = f64::from(self.level);
        let target_f = f64::from(target);
        if from <= target_f {
            // Nothing to descend: a decay to a sustain at or above the level, or a release
            // from silence.
            self.level = target;
            self.stage = if stage == Stage::Release {
                Stage::Idle
            } else {
                Stage::Sustain
            };
            return;
        }
        let mul = (CURVE.ln() / f64::from(samples)).exp();
        // The goal g with g + (from - g)·CURVE = target.
        let goal = (target_f - from * CURVE) / (1.0 - CURVE);
        self.stage = stage;
        self.mul = mul as f32;
        self.add = ((1.0 - mul) * goal) as f32;
        self.count = 0;
        self.length = samples;
        self.target = target;
    }

    /// The next sample's level.
    #[inline(always)]
    pub(super) fn next(&mut self, adsr: &Adsr) -> f32 {
        match self.stage {
            Stage::Idle => {}
            Stage::Attack => {
                self.count += 1;
                self.level = self.count as f32 * self.add;
                if self.count >= self.length {
                    self.level = 1.0;
                    self.enter_exponential(Stage::Decay, adsr.sustain, adsr.decay);
                }
            }
            Stage::Decay => {
                self.count += 1;
                self.level = self.mul * self.level + self.add;
                if self.count >= self.length {
                    self.level = self.target;
                    self.stage = Stage::Sustain;
                }
            }
            Stage::Sustain => {
                self.level += (adsr.sustain - self.level) * adsr.glide;
            }
            Stage::Release => {
                self.count += 1;
                self.level = (self.mul * self.level + self.add).max(0.0);
                if self.count >= self.length {
                    self.level = 0.0;
                    self.stage = Stage::Idle;
                }
            }
        }
        self.level
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(env: &mut Envelope, adsr: &Adsr, n: usize) -> Vec<f32> {
        (0..n).map(|_| env.next(adsr)).collect()
    }

    #[test]
    fn segments_last_their_times() {
        let adsr = Adsr::new(0.001, 0.01, 0.5, 0.02, 48000.0);
        let mut env = Envelope::IDLE;
        env.start(&adsr);
        let attack = run(&mut env, &adsr, 48);
        assert_eq!(attack[47], 1.0);
        assert!(attack[46] < 1.0);
        assert_eq!(env.stage(), Stage::Decay);
        let decay = run(&mut env, &adsr, 480 + 2);
        // Reaches the sustain level after exactly 10 ms, not before.
        assert!(decay[478] > 0.5);
        assert_eq!(decay[479], 0.5, "{:?}", &decay[475..]);
        env.release(&adsr);
        let release = run(&mut env, &adsr, 962);
        assert!(release[958] > 0.0);
        assert_eq!(release[959], 0.0);
        assert!(env.is_idle());
        // Exponential, not linear: half-way through, well below half the starting level.
        assert!(release[480] < 0.1);
    }

    #[test]
    fn release_during_attack_starts_from_the_level_reached() {
        let adsr = Adsr::new(0.01, 0.01, 0.5, 0.01, 48000.0);
        let mut env = Envelope::IDLE;
        env.start(&adsr);
        let a = run(&mut env, &adsr, 100);
        env.release(&adsr);
        let r = env.next(&adsr);
        assert!(r < a[99] && r > 0.9 * a[99]);
    }
}
