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

use downbeat_graph::{denormal::flush, math};

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
            glide: (1.0 - math::exp(-1.0 / (SUSTAIN_GLIDE * sample_rate))) as f32,
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
        let mul = math::exp(math::ln(CURVE) / f64::from(samples));
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
                self.level = glide(self.level, adsr);
            }
            Stage::Release => {
                self.count += 1;
                self.level = non_negative(self.mul * self.level + self.add);
                if self.count >= self.length {
                    self.level = 0.0;
                    self.stage = Stage::Idle;
                }
            }
        }
        self.level
    }
}

impl Envelope {
    /// The next `out.len()` levels: what as many calls of [`next`](Envelope::next) return,
    /// bit for bit, computed a segment at a time (a loop without a stage test per sample).
    pub(super) fn fill(&mut self, adsr: &Adsr, out: &mut [f32]) {
        let mut k = 0;
        while k < out.len() {
            let left = out.len() - k;
            // Samples of the current segment that fit, its last one included.
            let run = left.min((self.length.saturating_sub(self.count)) as usize);
            match self.stage {
                Stage::Idle => {
                    out[k..].fill(self.level);
                    return;
                }
                Stage::Sustain if glide(self.level, adsr) == self.level => {
                    // Settled: a fixed point of `glide`.
                    out[k..].fill(self.level);
                    return;
                }
                Stage::Sustain => {
                    for o in out[k..].iter_mut() {
                        self.level = glide(self.level, adsr);
                        *o = self.level;
                    }
                    return;
                }
                Stage::Attack if run > 1 => {
                    // All but the segment's last sample, which `next` ends.
                    for o in out[k..k + run - 1].iter_mut() {
                        self.count += 1;
                        *o = self.count as f32 * self.add;
                    }
                    self.level = out[k + run - 2];
                    k += run - 1;
                }
                Stage::Decay if run > 1 => {
                    let (mul, add) = (self.mul, self.add);
                    let mut level = self.level;
                    for o in out[k..k + run - 1].iter_mut() {
                        level = mul * level + add;
                        *o = level;
                    }
                    self.count += run as u32 - 1;
                    self.level = level;
                    k += run - 1;
                }
                Stage::Release if run > 1 => {
                    let (mul, add) = (self.mul, self.add);
                    let mut level = self.level;
                    for o in out[k..k + run - 1].iter_mut() {
                        level = non_negative(mul * level + add);
                        *o = level;
                    }
                    self.count += run as u32 - 1;
                    self.level = level;
                    k += run - 1;
                }
                _ => {
                    out[k] = self.next(adsr);
                    k += 1;
                }
            }
        }
    }
}

/// One step of the sustain level towards `adsr.sustain`. A sustain of 0 makes it decay
/// geometrically for ever: below `TINY` it is 0, so it never becomes a subnormal number,
/// whose fate would depend on the processor's flush mode.
#[inline(always)]
fn glide(level: f32, adsr: &Adsr) -> f32 {
    flush(level + (adsr.sustain - level) * adsr.glide)
}

/// `x`, or 0 where `x` is not above 0. A comparison rather than `f32::max`, whose result
/// for `max(-0.0, 0.0)` is unspecified (either zero, free to vary by target or compiler).
#[inline(always)]
fn non_negative(x: f32) -> f32 {
    if x > 0.0 {
        x
    } else {
        0.0
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

    /// `fill` returns what `next` returns, bit for bit, whatever the chunk sizes: through
    /// every stage, a sustain glide (to a new level, then to 0) and a release mid-attack.
    #[test]
    fn fill_is_next_sample_by_sample() {
        let mut adsr = Adsr::new(0.0005, 0.003, 0.4, 0.002, 48000.0);
        let (mut a, mut b) = (Envelope::IDLE, Envelope::IDLE);
        let mut filled = Vec::new();
        let mut stepped = Vec::new();
        let sizes = [1usize, 7, 64, 3, 30, 2];
        for round in 0..400 {
            match round {
                0 | 200 => {
                    a.start(&adsr);
                    b.start(&adsr);
                }
                20 => adsr.set_sustain(0.7),
                40 => adsr.set_sustain(0.0),
                150 | 203 => {
                    a.release(&adsr);
                    b.release(&adsr);
                }
                _ => {}
            }
            let n = sizes[round % sizes.len()];
            let mut chunk = vec![f32::NAN; n];
            a.fill(&adsr, &mut chunk);
            filled.extend(chunk.iter().map(|x| x.to_bits()));
            stepped.extend((0..n).map(|_| b.next(&adsr).to_bits()));
            assert_eq!(filled, stepped, "round {round}");
            assert_eq!(a.stage(), b.stage(), "round {round}");
        }
        assert!(a.is_idle());
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
