//! The gc suite's workload: a model of the benchmark program of K. S. Matheussen, "Realtime
//! Audio with Garbage Collection" (2010), appendix A.1, with all of its state in the collected
//! heap.
//!
//! The thesis' program plays four parts over about a minute; this one scales their start
//! times and counts to the run's length and keeps their rates:
//!
//! * a MIDI synthesizer (square waves with ADSR envelopes, panned, through two reverbs of
//!   three all-passes, four combs and a delay each) all the way through;
//! * 500 triangle-wave grains from 5 s, one every 0–30 ms;
//! * 400 FM insects (three oscillators, three envelopes each) from 20 s, one every 10–30 ms;
//! * 2000 Jaffe–Smith plucked strings from 40 s, one every 0–10 ms, each with a delay line in
//!   the atomic heap.
//!
//! The thesis' MIDI file is not published, so the synthesizer plays a random one: note-ons
//! at [`NOTES_PER_SECOND`] on 16 channels, 0.1–1 s long.
//!
//! Two things are added to reach the thesis' measured load, which its program got from its
//! runtime rather than from its DSP:
//!
//! * **Allocation rate.** The thesis' runs allocated about 193,700 objects in 60 s; the
//!   voices above allocate about 25,000. The rest comes from a control stream: every block
//!   allocates 12–20 small messages (a linked list), applies them to the channels' state and
//!   drops them, the short-lived garbage a scripting runtime makes. A minute of the song makes
//!   about 190,000 allocations (tested).
//! * **Audio work.** The thesis' synth took 0.39 ms per 5.8 ms block at least, 0.99 ms on
//!   average and 3.15 ms at most on a 2.67 GHz i7; the same DSP in Rust takes a few percent of
//!   that. Every unit generator therefore runs at [`OVERSAMPLE`] times the output rate (delay
//!   lines that many times longer) and the result is decimated by averaging: the same
//!   program, more samples. [`OVERSAMPLE`] and [`NOTES_PER_SECOND`] (which sets the load of
//!   the quiet parts) were chosen on the build machine, a 2-vCPU AMD EPYC, where they give
//!   about 0.9 ms on average and 3 ms at most; they are constants, not calibrated per run, so
//!   every machine plays the same song.
//!
//! The root set is [`ROOTS`] slots, the thesis' 18,584 bytes, of which the song uses four.

use std::f64::consts::TAU;

use downbeat_gc::{Block, Gc, Mutator};

use crate::rng::Rng;

/// Output frames per block.
pub const FRAMES: usize = 256;
/// Output sample rate.
pub const RATE: f64 = 44_100.0;
/// One block: 256 frames at 44.1 kHz, the thesis' 5.8 ms.
pub const BLOCK_SECONDS: f64 = FRAMES as f64 / RATE;
/// Internal samples per output sample (see the module documentation).
pub const OVERSAMPLE: usize = 16;
/// Root slots: 18,584 bytes, the size of the thesis' roots.
pub const ROOTS: usize = 18_584 / 8;
/// Voices that can sound at once (the voice table's length).
pub const TABLE: usize = 384;
/// The thesis' song length, the time axis the parts are placed on.
pub const SONG_SECONDS: f64 = 60.0;

/// Internal samples per block and the internal rate.
const N: usize = FRAMES * OVERSAMPLE;
const SR: f64 = RATE * OVERSAMPLE as f64;
/// Wavetable length for the oscillators (a power of two).
const SINE: usize = 4096;
/// Channels of the control stream.
const CHANNELS: usize = 16;
/// Note-ons per second of the synthesizer's random MIDI song.
pub const NOTES_PER_SECOND: f64 = 25.0;

const ROOT_VOICES: usize = 0;
const ROOT_REVERBS: [usize; 2] = [1, 2];
const ROOT_CHANNELS: usize = 3;

/// Voice kinds, data word 0 of every voice; data word 1 is the block it ends at.
const NOTE: u64 = 1;
const GRAIN: u64 = 2;
const INSECT: u64 = 3;
const PLUCK: u64 = 4;

/// The reverb (A.1's `Reverb`): all-pass sizes, comb sizes and scalers, at 44.1 kHz.
const ALLPASS: [usize; 3] = [1051, 337, 113];
const COMBS: [(usize, f32); 4] = [
    (9601, 0.742),
    (10007, 0.733),
    (10799, 0.715),
    (11597, 0.697),
];
/// `(Fx-ctrl 0.3 0.04 (Reverb 0.03))` and `(Reverb 0.31)`: the left and right channels.
const REVERB_DELAY: [f64; 2] = [0.03, 0.31];

fn f(b: &Block<'_>, o: Gc, i: usize) -> f64 {
    f64::from_bits(b.data(o, i).expect("live handle"))
}

fn setf(b: &mut Block<'_>, o: Gc, i: usize, v: f64) {
    b.set_data(o, i, v.to_bits()).expect("live handle");
}

fn blocks(seconds: f64) -> u64 {
    (seconds / BLOCK_SECONDS).ceil() as u64
}

/// One part's schedule: when its next voice starts and how many are left.
struct Part {
    next: f64,
    left: u32,
    wait: (f64, f64),
}

impl Part {
    fn new(start: f64, count: f64, wait: (f64, f64)) -> Self {
        Self {
            next: start,
            left: count.round() as u32,
            wait,
        }
    }

    /// Whether a voice of this part starts before `until` (seconds); moves the schedule on.
    fn due(&mut self, until: f64, rng: &mut Rng) -> bool {
        if self.left == 0 || self.next >= until {
            return false;
        }
        self.left -= 1;
        self.next += rng.between(self.wait.0, self.wait.1);
        true
    }
}

/// The song: its schedule, and scratch buffers allocated once so that a block allocates
/// nothing outside the collected heaps.
pub struct Song {
    rng: Rng,
    render: bool,
    notes: Part,
    grains: Part,
    insects: Part,
    plucks: Part,
    cursor: usize,
    /// Voices not started because the voice table was full.
    pub dropped: u64,
    /// Allocations the collected heaps refused (out of memory).
    pub failed: u64,
    /// Most voices sounding in one block.
    pub peak_voices: usize,
    sine: Box<[f32]>,
    bus: [Box<[f32]>; 2],
    direct: Box<[f32]>,
    tmp: Box<[f32]>,
    sum: Box<[f32]>,
    env: [Box<[f32]>; 3],
    out: Box<[f32]>,
}

impl Song {
    /// The song scaled to `seconds`. With `render` false the voices are born, released and
    /// collected as usual but produce no samples (to count allocations quickly).
    pub fn new(seconds: f64, render: bool) -> Self {
        let s = seconds / SONG_SECONDS;
        // Written element by element rather than calloc'd, so every page is backed before the
        // first block that uses it (a grain's envelope may first be needed a minute in).
        let zeros = |n: usize| (0..n).map(|_| 0f32).collect::<Box<[f32]>>();
        let buf = || zeros(N);
        Self {
            rng: Rng(0x5eed_0500),
            render,
            notes: Part::new(
                0.0,
                55.0 * s * NOTES_PER_SECOND,
                (0.0, 2.0 / NOTES_PER_SECOND),
            ),
            grains: Part::new(5.0 * s, 500.0 * s, (0.0, 0.030)),
            insects: Part::new(20.0 * s, 400.0 * s, (0.010, 0.030)),
            plucks: Part::new(40.0 * s, 2000.0 * s, (0.0, 0.010)),
            cursor: 0,
            dropped: 0,
            failed: 0,
            peak_voices: 0,
            sine: (0..SINE)
                .map(|i| (TAU * i as f64 / SINE as f64).sin() as f32)
                .collect(),
            bus: [buf(), buf()],
            direct: buf(),
            tmp: buf(),
            sum: buf(),
            env: [buf(), buf(), buf()],
            out: zeros(2 * FRAMES),
        }
    }

    /// The last block's stereo output, interleaved.
    pub fn out(&self) -> &[f32] {
        &self.out
    }

    /// Allocates what lives for the whole song (voice table, reverbs and their delay lines,
    /// channel state) in one block of its own, before the timed ones.
    ///
    /// # Errors
    ///
    /// If the heaps are too small for it.
    pub fn setup(&mut self, m: &mut Mutator) -> Result<(), downbeat_gc::GcError> {
        let mut b = m.begin_block();
        let table = b.alloc(TABLE, 0)?;
        b.set_root(ROOT_VOICES, Some(table)).expect("live handle");
        for (k, delay) in REVERB_DELAY.into_iter().enumerate() {
            let r = b.alloc(8, 8)?;
            let sizes = ALLPASS
                .into_iter()
                .chain(COMBS.map(|c| c.0))
                .chain([(delay * RATE) as usize]);
            for (i, len) in sizes.enumerate() {
                let line = b.alloc_atomic(len * OVERSAMPLE * 4)?;
                b.samples(line).expect("just allocated").fill(0.0);
                b.set_atomic(r, i, Some(line)).expect("live handle");
            }
            b.set_root(ROOT_REVERBS[k], Some(r)).expect("live handle");
        }
        let channels = b.alloc(0, CHANNELS)?;
        for c in 0..CHANNELS {
            setf(&mut b, channels, c, 0.8);
        }
        b.set_root(ROOT_CHANNELS, Some(channels))
            .expect("live handle");
        Ok(())
    }

    /// Plays block `n` (after [`setup`](Self::setup)): control messages, voices starting,
    /// voices rendered or ending, reverbs, mixdown.
    pub fn block(&mut self, b: &mut Block<'_>, n: u64) {
        let t1 = (n + 1) as f64 * BLOCK_SECONDS;
        let table = b
            .root(ROOT_VOICES)
            .expect("live handle")
            .expect("Song::setup ran");
        self.control(b, n);
        while self.notes.due(t1, &mut self.rng) {
            self.start(b, table, n, NOTE);
        }
        while self.grains.due(t1, &mut self.rng) {
            self.start(b, table, n, GRAIN);
        }
        while self.insects.due(t1, &mut self.rng) {
            self.start(b, table, n, INSECT);
        }
        while self.plucks.due(t1, &mut self.rng) {
            self.start(b, table, n, PLUCK);
        }
        let [bus_l, bus_r] = &mut self.bus;
        for buf in [bus_l, bus_r, &mut self.direct] {
            buf.fill(0.0);
        }
        let mut sounding = 0;
        for slot in 0..TABLE {
            let Some(v) = b.get_ref(table, slot).expect("live handle") else {
                continue;
            };
            if b.data(v, 1).expect("live handle") <= n {
                b.set_ref(table, slot, None).expect("live handle"); // the voice's whole graph is garbage now
                continue;
            }
            sounding += 1;
            match b.data(v, 0).expect("live handle") {
                NOTE => self.note(b, v, n),
                GRAIN => self.grain(b, v),
                INSECT => self.insect(b, v),
                _ => self.pluck(b, v),
            }
        }
        self.peak_voices = self.peak_voices.max(sounding);
        if self.render {
            for (k, root) in ROOT_REVERBS.into_iter().enumerate() {
                let r = b.root(root).expect("live handle").expect("Song::setup ran");
                reverb(b, r, &mut self.bus[k], &mut self.tmp, &mut self.sum);
            }
            let scale = 1.0 / OVERSAMPLE as f32;
            for (i, frame) in self.out.chunks_exact_mut(2).enumerate() {
                let at = i * OVERSAMPLE..(i + 1) * OVERSAMPLE;
                let direct: f32 = self.direct[at.clone()].iter().sum();
                frame[0] = (self.bus[0][at.clone()].iter().sum::<f32>() + direct) * scale;
                frame[1] = (self.bus[1][at].iter().sum::<f32>() + direct) * scale;
            }
        }
    }

    /// The control stream: 12–20 messages on random channels, linked into a list, applied to
    /// the channels' volumes, then dropped.
    fn control(&mut self, b: &mut Block<'_>, n: u64) {
        let channels = b
            .root(ROOT_CHANNELS)
            .expect("live handle")
            .expect("Song::setup ran");
        let count = 12 + (self.rng.next() % 9) as usize;
        let t = n as f64 * BLOCK_SECONDS;
        let mut head = None;
        for _ in 0..count {
            let Ok(msg) = b.alloc(1, 2) else {
                self.failed += 1;
                break;
            };
            let ch = self.rng.next() % CHANNELS as u64;
            b.set_ref(msg, 0, head).expect("live handle");
            b.set_data(msg, 0, ch).expect("live handle");
            let phase = t * 0.25 + ch as f64 / CHANNELS as f64;
            setf(b, msg, 1, 0.6 + 0.4 * (TAU * phase).sin());
            head = Some(msg);
        }
        while let Some(msg) = head {
            let (ch, value) = (b.data(msg, 0).expect("live handle") as usize, f(b, msg, 1));
            setf(b, channels, ch, value);
            head = b.get_ref(msg, 0).expect("live handle");
        }
    }

    /// Starts a voice of `kind` in a free slot of the table, if there is one.
    fn start(&mut self, b: &mut Block<'_>, table: Gc, n: u64, kind: u64) {
        let Some(slot) = (0..TABLE)
            .map(|k| (self.cursor + k) % TABLE)
            .find(|&i| b.get_ref(table, i).expect("live handle").is_none())
        else {
            self.dropped += 1;
            return;
        };
        self.cursor = slot + 1;
        let voice = match kind {
            NOTE => self.new_note(b, n),
            GRAIN => self.new_grain(b, n),
            INSECT => self.new_insect(b, n),
            _ => self.new_pluck(b, n),
        };
        match voice {
            Ok(v) => b.set_ref(table, slot, Some(v)).expect("live handle"),
            Err(_) => self.failed += 1,
        }
    }

    /// A note-on of the MIDI synthesizer: voice, oscillator, ADSR and its parameters, panner,
    /// volume and the note-on event (a note-off event follows at the release).
    /// Voice: refs `[osc, adsr, pan, vol, event]`, data `[kind, end, channel, release block]`.
    fn new_note(&mut self, b: &mut Block<'_>, n: u64) -> Result<Gc, downbeat_gc::GcError> {
        let rng = &mut self.rng;
        let key = 36 + rng.next() % 60;
        let freq = 440.0 * 2f64.powf((key as f64 - 69.0) / 12.0);
        let (dur, velocity) = (rng.between(0.1, 1.0), rng.between(0.3, 1.0));
        let ch = rng.next() % CHANNELS as u64;
        let v = b.alloc(5, 4)?;
        let osc = b.alloc(0, 2)?;
        let adsr = b.alloc(1, 2)?;
        let params = b.alloc(0, 4)?;
        let pan = b.alloc(0, 2)?;
        let vol = b.alloc(0, 1)?;
        let event = b.alloc(0, 3)?;
        setf(b, osc, 1, freq / SR);
        // :a 20 ms :d 40 ms :s 0.2 :r 10 ms, as per-sample steps.
        for (i, x) in [
            1.0 / (0.020 * SR),
            0.8 / (0.040 * SR),
            0.2,
            1.0 / (0.010 * SR),
        ]
        .into_iter()
        .enumerate()
        {
            setf(b, params, i, x);
        }
        b.set_ref(adsr, 0, Some(params)).expect("live handle");
        // Stereo-pan with c = note / 127.
        let angle = std::f64::consts::FRAC_PI_4 - key as f64 / 127.0 * std::f64::consts::FRAC_PI_2;
        let half = std::f64::consts::FRAC_1_SQRT_2;
        setf(b, pan, 0, half * (angle.cos() + angle.sin()));
        setf(b, pan, 1, half * (angle.cos() - angle.sin()));
        setf(b, vol, 0, 0.1 * velocity);
        for (i, x) in [0x90 | ch, key, (velocity * 127.0) as u64]
            .into_iter()
            .enumerate()
        {
            b.set_data(event, i, x).expect("live handle");
        }
        for (i, o) in [osc, adsr, pan, vol, event].into_iter().enumerate() {
            b.set_ref(v, i, Some(o)).expect("live handle");
        }
        let release = n + blocks(dur);
        // The 10 ms release, and one block to spare.
        let end = release + blocks(0.010) + 1;
        for (i, x) in [NOTE, end, ch, release].into_iter().enumerate() {
            b.set_data(v, i, x).expect("live handle");
        }
        Ok(v)
    }

    fn note(&mut self, b: &mut Block<'_>, v: Gc, n: u64) {
        let [osc, adsr, pan, vol] =
            [0, 1, 2, 3].map(|i| b.get_ref(v, i).expect("live handle").expect("note"));
        if b.data(v, 3).expect("live handle") == n {
            // Note-off: its event replaces the note-on's, which becomes garbage.
            if let Ok(off) = b.alloc(0, 3) {
                let on = b
                    .get_ref(v, 4)
                    .expect("live handle")
                    .expect("note-on event");
                b.set_data(off, 0, 0x80 | (b.data(on, 0).expect("live handle") & 0xf))
                    .expect("live handle");
                b.set_data(off, 1, b.data(on, 1).expect("live handle"))
                    .expect("live handle");
                b.set_ref(v, 4, Some(off)).expect("live handle");
            } else {
                self.failed += 1;
            }
            b.set_data(adsr, 1, 3).expect("live handle");
        }
        if !self.render {
            return;
        }
        let params = b
            .get_ref(adsr, 0)
            .expect("live handle")
            .expect("adsr parameters");
        let [attack, decay, sustain, release] = [0, 1, 2, 3].map(|i| f(b, params, i));
        let channels = b
            .root(ROOT_CHANNELS)
            .expect("live handle")
            .expect("Song::setup ran");
        let gain = f(b, vol, 0) * f(b, channels, b.data(v, 2).expect("live handle") as usize);
        let (left, right) = (f(b, pan, 0) as f32, f(b, pan, 1) as f32);
        let (mut phase, inc) = (f(b, osc, 0), f(b, osc, 1));
        let (mut level, mut stage) = (f(b, adsr, 0), b.data(adsr, 1).expect("live handle"));
        let [bus_l, bus_r] = &mut self.bus;
        for (l, r) in bus_l.iter_mut().zip(bus_r.iter_mut()) {
            match stage {
                0 => {
                    level += attack;
                    if level >= 1.0 {
                        (level, stage) = (1.0, 1);
                    }
                }
                1 => {
                    level -= decay;
                    if level <= sustain {
                        (level, stage) = (sustain, 2);
                    }
                }
                2 => {}
                _ => level = (level - release).max(0.0),
            }
            let square = if phase < 0.5 { gain } else { -gain };
            let x = (square * level) as f32;
            *l += x * left;
            *r += x * right;
            phase += inc;
            if phase >= 1.0 {
                phase -= 1.0;
            }
        }
        setf(b, osc, 0, phase);
        setf(b, adsr, 0, level);
        b.set_data(adsr, 1, stage).expect("live handle");
    }

    /// A grain: voice, triangle oscillator, envelope `((0 0) (.5 .05) (1 0))` and its points.
    /// Voice: refs `[osc, env]`, data `[kind, end]`.
    fn new_grain(&mut self, b: &mut Block<'_>, n: u64) -> Result<Gc, downbeat_gc::GcError> {
        let freq = self.rng.between(50.0, 2000.0);
        let dur = self.rng.between(0.4, 2.0);
        let v = b.alloc(2, 2)?;
        let osc = b.alloc(0, 2)?;
        setf(b, osc, 1, freq / SR);
        let env = new_env(b, &[0.0, 0.0, 50.0, 0.05, 100.0, 0.0], 1.0, dur)?;
        b.set_ref(v, 0, Some(osc)).expect("live handle");
        b.set_ref(v, 1, Some(env)).expect("live handle");
        b.set_data(v, 0, GRAIN).expect("live handle");
        b.set_data(v, 1, n + blocks(dur)).expect("live handle");
        Ok(v)
    }

    fn grain(&mut self, b: &mut Block<'_>, v: Gc) {
        if !self.render {
            return;
        }
        let [osc, env] = [0, 1].map(|i| b.get_ref(v, i).expect("live handle").expect("grain"));
        run_env(b, env, &mut self.env[0]);
        let (mut phase, inc) = (f(b, osc, 0), f(b, osc, 1));
        for (o, e) in self.direct.iter_mut().zip(self.env[0].iter()) {
            *o += e * (4.0 * (phase as f32 - 0.5).abs() - 1.0);
            phase += inc;
            if phase >= 1.0 {
                phase -= 1.0;
            }
        }
        setf(b, osc, 0, phase);
    }

    /// An insect (Bill Schottstaedt's, as in A.1): voice, carrier and two modulators, three
    /// envelopes with their points.
    /// Voice: refs `[carrier, fm1, fm2, amp env, index env, mod-freq env]`,
    /// data `[kind, end, fm2 amplitude]`.
    fn new_insect(&mut self, b: &mut Block<'_>, n: u64) -> Result<Gc, downbeat_gc::GcError> {
        let r = &mut self.rng;
        let dur = r.between(0.4, 1.6);
        let frequency = r.between(600.0, 8000.0);
        let amplitude = r.between(0.03, 0.2);
        let mod_freq = r.between(30.0, 80.0);
        let mod_skew = r.between(-30.0, -2.0);
        let mod_index = r.between(250.0, 700.0);
        let fm_index = r.between(0.003, 0.7);
        let fm_ratio = 0.5;
        let radians = |hz: f64| TAU * hz / SR;
        let v = b.alloc(6, 3)?;
        for (i, hz) in [frequency, mod_freq, fm_ratio * frequency]
            .into_iter()
            .enumerate()
        {
            let osc = b.alloc(0, 2)?;
            setf(b, osc, 1, radians(hz));
            b.set_ref(v, i, Some(osc)).expect("live handle");
        }
        let envs: [(&[f64], f64); 3] = [
            (&[0.0, 0.0, 25.0, 1.0, 75.0, 0.7, 100.0, 0.0], amplitude),
            (
                &[0.0, 1.0, 25.0, 0.7, 75.0, 0.78, 100.0, 1.0],
                radians(mod_index),
            ),
            (
                &[0.0, 0.0, 40.0, 1.0, 95.0, 1.0, 100.0, 0.5],
                radians(mod_skew),
            ),
        ];
        for (i, (points, scaler)) in envs.into_iter().enumerate() {
            let env = new_env(b, points, scaler, dur)?;
            b.set_ref(v, 3 + i, Some(env)).expect("live handle");
        }
        b.set_data(v, 0, INSECT).expect("live handle");
        b.set_data(v, 1, n + blocks(dur)).expect("live handle");
        setf(b, v, 2, radians(fm_index * fm_ratio * frequency));
        Ok(v)
    }

    fn insect(&mut self, b: &mut Block<'_>, v: Gc) {
        if !self.render {
            return;
        }
        let r = [0, 1, 2, 3, 4, 5].map(|i| b.get_ref(v, i).expect("live handle").expect("insect"));
        let [amp, index, skew] = &mut self.env;
        run_env(b, r[3], amp);
        run_env(b, r[4], index);
        run_env(b, r[5], skew);
        let fm2_amp = f(b, v, 2);
        let (mut carrier, mut fm1, mut fm2) = (f(b, r[0], 0), f(b, r[1], 0), f(b, r[2], 0));
        let (f_carrier, f_fm1, f_fm2) = (f(b, r[0], 1), f(b, r[1], 1), f(b, r[2], 1));
        let sine = &self.sine;
        let lookup = |phase: f64| sine[(phase * (SINE as f64 / TAU)) as i64 as usize & (SINE - 1)];
        for i in 0..N {
            // garble-in = index-env * oscil(fm1, skew-env); garble-out = fm2-amp *
            // oscil(fm2, garble-in); out = amp-env * oscil(carrier, garble-out + garble-in).
            let garble_in = index[i] as f64 * lookup(fm1) as f64;
            fm1 += f_fm1 + skew[i] as f64;
            let garble_out = fm2_amp * lookup(fm2) as f64;
            fm2 += f_fm2 + garble_in;
            self.direct[i] += amp[i] * lookup(carrier);
            carrier += f_carrier + garble_out + garble_in;
        }
        for (o, phase) in [(r[0], carrier), (r[1], fm1), (r[2], fm2)] {
            setf(b, o, 0, phase.rem_euclid(TAU));
        }
    }

    /// A plucked string (Jaffe and Smith, after Bill Schottstaedt's `pluck`): voice, delay line
    /// of noise in the atomic heap, and its two one-zero filters.
    /// Voice: refs `[line, all-pass, feedback]`, data `[kind, end, position, amplitude]`.
    fn new_pluck(&mut self, b: &mut Block<'_>, n: u64) -> Result<Gc, downbeat_gc::GcError> {
        let r = &mut self.rng;
        let dur = r.between(0.1, 1.2);
        let freq = r.between(50.0, 400.0);
        let amp = r.between(0.3, 0.8);
        let weighting = r.between(0.2, 0.5);
        let lossfact = r.between(0.9, 0.99);
        let (wt0, c, len) = tune(freq, weighting);
        let (lf, wt) = (lossfact.min(1.0), wt0.min(1.0));
        let v = b.alloc(3, 4)?;
        let line = b.alloc_atomic(len * 4)?;
        for s in b.samples(line).expect("just allocated").iter_mut() {
            *s = (1.0 - r.between(0.0, 2.0)) as f32;
        }
        let allpass = b.alloc(0, 3)?;
        let feedback = b.alloc(0, 3)?;
        setf(b, allpass, 0, lf * (1.0 - wt));
        setf(b, allpass, 1, lf * wt);
        setf(b, feedback, 0, c);
        setf(b, feedback, 1, 1.0);
        b.set_atomic(v, 0, Some(line)).expect("live handle");
        b.set_ref(v, 1, Some(allpass)).expect("live handle");
        b.set_ref(v, 2, Some(feedback)).expect("live handle");
        b.set_data(v, 0, PLUCK).expect("live handle");
        b.set_data(v, 1, n + blocks(dur)).expect("live handle");
        setf(b, v, 3, amp);
        Ok(v)
    }

    fn pluck(&mut self, b: &mut Block<'_>, v: Gc) {
        if !self.render {
            return;
        }
        let (allpass, feedback) = (
            b.get_ref(v, 1).expect("live handle").expect("pluck"),
            b.get_ref(v, 2).expect("live handle").expect("pluck"),
        );
        let [a0, a1, mut x1] = [0, 1, 2].map(|i| f(b, allpass, i) as f32);
        let [c, c1, mut y1] = [0, 1, 2].map(|i| f(b, feedback, i) as f32);
        let amp = f(b, v, 3) as f32;
        let mut at = b.data(v, 2).expect("live handle") as usize;
        let line = b
            .get_atomic(v, 0)
            .expect("live handle")
            .expect("pluck line");
        let tab = b.samples(line).expect("a live voice's line is live");
        for o in self.direct.iter_mut() {
            let val = tab[at];
            let ap = a0 * val + a1 * x1;
            x1 = val;
            let fb = c * ap + c1 * y1;
            y1 = ap;
            tab[at] = (1.0 - c) * fb;
            at += 1;
            if at == tab.len() {
                at = 0;
            }
            *o += amp * val;
        }
        setf(b, allpass, 2, x1 as f64);
        setf(b, feedback, 2, y1 as f64);
        b.set_data(v, 2, at as u64).expect("live handle");
    }
}

/// `tuneIt` of the thesis' pluck: the weighting, the all-pass coefficient and the delay
/// length that tune the string to `freq` at the internal rate.
fn tune(freq: f64, s1: f64) -> (f64, f64, usize) {
    fn optimum_c(s: f64, o: f64, p: f64) -> (f64, f64) {
        let pa = (1.0 / o) * (s * o.sin()).atan2(1.0 - s + s * o.cos());
        let mut whole = (p - pa).floor();
        let mut frac = p - pa - whole;
        while frac < 0.1 {
            whole -= 1.0;
            frac += 1.0;
        }
        (whole, (o.sin() - (o * frac).sin()) / (o + o * frac).sin())
    }
    let p = SR / freq;
    let s = if s1 == 0.0 { 0.5 } else { s1 };
    let o = TAU * freq / SR;
    let (t1, c1) = optimum_c(s, o, p);
    let (t2, c2) = optimum_c(1.0 - s, o, p);
    let (wt, c, len) = if s != 0.5 && c1.abs() < c2.abs() {
        (1.0 - s, c1, t1)
    } else {
        (s, c2, t2)
    };
    (wt, c, len.max(1.0) as usize)
}

/// A breakpoint envelope over `dur` seconds: points `x0 y0 x1 y1 ...` with x in 0..100, times
/// `scaler`. Env: refs `[points]`, data `[scaler, samples, value, increment, left in segment,
/// segment, number of points]`.
fn new_env(
    b: &mut Block<'_>,
    points: &[f64],
    scaler: f64,
    dur: f64,
) -> Result<Gc, downbeat_gc::GcError> {
    let p = b.alloc(0, points.len())?;
    for (i, x) in points.iter().enumerate() {
        setf(b, p, i, *x);
    }
    let env = b.alloc(1, 7)?;
    b.set_ref(env, 0, Some(p)).expect("live handle");
    setf(b, env, 0, scaler);
    setf(b, env, 1, dur * SR);
    b.set_data(env, 6, (points.len() / 2) as u64)
        .expect("live handle");
    segment(b, env, 0);
    Ok(env)
}

/// Enters segment `k` of the envelope (holds the last point after the end).
fn segment(b: &mut Block<'_>, env: Gc, k: u64) {
    let p = b
        .get_ref(env, 0)
        .expect("live handle")
        .expect("envelope points");
    let (scaler, samples) = (f(b, env, 0), f(b, env, 1));
    let (k, count) = (k as usize, b.data(env, 6).expect("live handle") as usize);
    let (value, incr, left) = if k + 1 < count {
        let [x0, y0, x1, y1] = [2 * k, 2 * k + 1, 2 * k + 2, 2 * k + 3].map(|i| f(b, p, i));
        let n = ((x1 - x0) / 100.0 * samples).round().max(1.0);
        (y0 * scaler, (y1 - y0) * scaler / n, n as u64)
    } else {
        (f(b, p, 2 * count - 1) * scaler, 0.0, u64::MAX)
    };
    setf(b, env, 2, value);
    setf(b, env, 3, incr);
    b.set_data(env, 4, left).expect("live handle");
    b.set_data(env, 5, k as u64).expect("live handle");
}

/// One block of the envelope into `out`.
fn run_env(b: &mut Block<'_>, env: Gc, out: &mut [f32]) {
    let (mut value, mut incr) = (f(b, env, 2), f(b, env, 3));
    let mut left = b.data(env, 4).expect("live handle");
    for o in out.iter_mut() {
        *o = value as f32;
        value += incr;
        left -= 1;
        if left == 0 {
            segment(b, env, b.data(env, 5).expect("live handle") + 1);
            (value, incr, left) = (
                f(b, env, 2),
                f(b, env, 3),
                b.data(env, 4).expect("live handle"),
            );
        }
    }
    setf(b, env, 2, value);
    setf(b, env, 3, incr);
    b.set_data(env, 4, left).expect("live handle");
}

/// `(Fx-ctrl 0.3 0.04 (Reverb d))` over one channel in place: three all-passes, the sum of
/// four combs, a delay, then 0.3 dry + 0.04 wet. One delay line at a time, a block at a time.
fn reverb(b: &mut Block<'_>, r: Gc, io: &mut [f32], tmp: &mut [f32], sum: &mut [f32]) {
    tmp.copy_from_slice(io);
    for u in 0..ALLPASS.len() {
        with_line(b, r, u, |line, at| {
            // CLM's all-pass, feedback -0.7, feedforward 0.7.
            for x in tmp.iter_mut() {
                let delayed = line[*at];
                let din = *x - 0.7 * delayed;
                line[*at] = din;
                *x = 0.7 * din + delayed;
                *at = if *at + 1 == line.len() { 0 } else { *at + 1 };
            }
        });
    }
    sum.fill(0.0);
    for (k, (_, scaler)) in COMBS.into_iter().enumerate() {
        with_line(b, r, ALLPASS.len() + k, |line, at| {
            for (s, x) in sum.iter_mut().zip(tmp.iter()) {
                let delayed = line[*at];
                line[*at] = x + scaler * delayed;
                *s += delayed;
                *at = if *at + 1 == line.len() { 0 } else { *at + 1 };
            }
        });
    }
    with_line(b, r, ALLPASS.len() + COMBS.len(), |line, at| {
        for s in sum.iter_mut() {
            // A plain delay: what went in a line's length ago comes out.
            std::mem::swap(&mut line[*at], s);
            *at = if *at + 1 == line.len() { 0 } else { *at + 1 };
        }
    });
    for (x, s) in io.iter_mut().zip(sum.iter()) {
        *x = 0.3 * *x + 0.04 * s;
    }
}

/// Runs `f` on delay line `u` of reverb `r` and its position, and stores the position back.
fn with_line(b: &mut Block<'_>, r: Gc, u: usize, f: impl FnOnce(&mut [f32], &mut usize)) {
    let line = b
        .get_atomic(r, u)
        .expect("live handle")
        .expect("reverb line");
    let mut at = b.data(r, u).expect("live handle") as usize;
    f(
        b.samples(line).expect("reverb lines live for the song"),
        &mut at,
    );
    b.set_data(r, u, at as u64).expect("live handle");
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use downbeat_gc::{start, Config, Mode, Mutator};
    use downbeat_rt::guard;

    use super::*;

    downbeat_rt::install_guard_allocator!();

    fn config(mode: Mode) -> Config {
        Config {
            mode,
            roots: ROOTS,
            atomic_bytes: 64 << 20,
            copy_rate: Some(5.0),
            poll: Duration::from_micros(50),
            ..Config::default()
        }
    }

    fn play(m: &mut Mutator, song: &mut Song, blocks: std::ops::Range<u64>) {
        for n in blocks {
            // Spin until the last snapshot is copied, so begin_block never falls back to
            // yielding (a system call) when the collector threads are slow to get a CPU.
            while m.snapshot_pending() {
                std::hint::spin_loop();
            }
            let mut b = m.begin_block();
            song.block(&mut b, n);
        }
    }

    #[test]
    fn the_song_allocates_at_the_thesis_rate_and_every_voice_starts() {
        // Stop-the-world collects inside end_block: the heap cannot fill up however slowly
        // collector threads would be scheduled.
        let (mut m, _c) = start(config(Mode::StopTheWorld)).unwrap();
        let mut song = Song::new(SONG_SECONDS, false);
        song.setup(&mut m).unwrap();
        play(&mut m, &mut song, 0..blocks(SONG_SECONDS));
        let s = m.stats();
        // The thesis' runs: 193,651 to 193,751 allocations in a minute.
        let per_minute = s.objects_allocated + s.atomic_allocated;
        assert!(
            (180_000..200_000).contains(&per_minute),
            "{per_minute} allocations"
        );
        let left = [&song.notes, &song.grains, &song.insects, &song.plucks].map(|p| p.left);
        assert_eq!(left, [0; 4], "every part played all its voices");
        assert_eq!((song.dropped, song.failed), (0, 0));
        assert!(
            song.peak_voices > 100 && song.peak_voices < TABLE,
            "{} voices at once",
            song.peak_voices
        );
        assert_eq!(ROOTS * 8, 18_584);
    }

    #[test]
    fn the_audio_path_is_real_time_safe() {
        let (mut m, _c) = start(config(Mode::Snapshot)).unwrap();
        // One second: every part scaled into it, all rendered.
        let seconds = 1.0;
        let mut song = Song::new(seconds, true);
        song.setup(&mut m).unwrap();
        play(&mut m, &mut song, 0..4);
        let (_, report) = guard::check_with(&guard::Options::new(), || {
            play(&mut m, &mut song, 4..blocks(seconds));
        });
        assert!(report.is_complete(), "{report}");
        report.assert_clean();
        let left = [&song.notes, &song.grains, &song.insects, &song.plucks].map(|p| p.left);
        assert_eq!(left, [0; 4], "every part played inside the guard");
        assert!(song.out().iter().any(|s| *s != 0.0), "the song made sound");
        assert!(m.stats().objects_freed > 0, "collected garbage came back");
    }
}
