//! One voice of the sampler: where it reads in its sample, how fast, and its release.

use super::interp::{read, PAD_BEFORE};

/// One playing sample. `Copy`, so that a stolen voice moves whole into a fade slot and a
/// voice renders each channel from the same starting state.
#[derive(Clone, Copy, Debug)]
pub(super) struct Voice {
    /// Sounding (or fading): not yet past its sample's end or its release.
    pub(super) active: bool,
    pub(super) zone: u16,
    pub(super) channel: u8,
    pub(super) note: f32,
    /// No note off yet.
    pub(super) key_down: bool,
    /// Order of the note on, for stealing the oldest.
    pub(super) started: u64,
    /// Order of the release, 0 while not releasing.
    pub(super) released: u64,
    /// Read position in the sample, in frames.
    pos: f64,
    /// Frames of the sample per output frame.
    inc: f64,
    /// `inc` is exactly 1: the sample is copied, not interpolated.
    unity: bool,
    /// Velocity gain.
    gain: f32,
    /// Envelope: 1 until the release, then falling linearly to 0.
    env: f32,
    /// Level the release started from, and its length in samples.
    release_from: f32,
    release_len: u32,
    /// Samples of the release left.
    release_left: u32,
}

impl Voice {
    pub(super) const IDLE: Voice = Voice {
        active: false,
        zone: 0,
        channel: 0,
        note: 0.0,
        key_down: false,
        started: 0,
        released: 0,
        pos: 0.0,
        inc: 0.0,
        unity: false,
        gain: 0.0,
        env: 0.0,
        release_from: 0.0,
        release_len: 0,
        release_left: 0,
    };

    /// A voice starting `zone` from its first frame.
    pub(super) fn start(
        zone: u16,
        channel: u8,
        note: f32,
        gain: f32,
        inc: f64,
        order: u64,
    ) -> Self {
        Voice {
            active: true,
            zone,
            channel,
            note,
            key_down: true,
            started: order,
            released: 0,
            pos: 0.0,
            inc,
            unity: inc == 1.0,
            gain,
            env: 1.0,
            release_from: 1.0,
            release_len: 0,
            release_left: 0,
        }
    }

    pub(super) fn is_releasing(&self) -> bool {
        self.released != 0
    }

    /// Has produced nothing yet: taking it over needs no fade.
    pub(super) fn is_silent(&self) -> bool {
        self.pos == 0.0
    }

    /// Starts a linear fade from the level now to silence over `samples` samples (at once
    /// for 0). A voice already releasing keeps the shorter of the two.
    pub(super) fn release(&mut self, samples: u32, order: u64) {
        self.key_down = false;
        if self.is_releasing() && self.release_left <= samples {
            return;
        }
        self.released = order;
        self.release_from = self.env;
        self.release_len = samples;
        self.release_left = samples;
        if samples == 0 {
            self.active = false;
        }
    }

    /// Adds the voice into `out` from the padded channel `src` of a sample of `frames`
    /// frames, and returns the state after it; `self` is left as it was so that the
    /// caller renders every channel from the same state.
    #[inline]
    pub(super) fn render(&self, src: &[f32], frames: usize, out: &mut [f32]) -> Voice {
        let mut v = *self;
        let end = frames as f64;
        for o in out.iter_mut() {
            if !v.active {
                break;
            }
            let s = if v.unity {
                src[PAD_BEFORE + v.pos as usize]
            } else {
                read(src, v.pos)
            };
            *o += s * (v.gain * v.env);
            v.pos += v.inc;
            if v.pos >= end {
                v.active = false;
            }
            if v.released != 0 {
                v.release_left -= 1;
                v.env = v.release_from * (v.release_left as f32 / v.release_len as f32);
                if v.release_left == 0 {
                    v.active = false;
                }
            }
        }
        v
    }
}
