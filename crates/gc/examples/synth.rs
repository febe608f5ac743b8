//! A MIDI-driven synth on the collected heap, modelled on the thesis' benchmark program: every
//! note-on allocates a small voice graph, a burst of grains and a burst of plucked strings with
//! random delay-line lengths follow, and the audio loop runs self-paced at 5.8 ms blocks.
//!
//! `cargo run --release -p downbeat-gc --example synth [seconds]`

use std::time::{Duration, Instant};

use downbeat_gc::{start, Block, Config, Gc};

const FRAMES: usize = 256;
const RATE: f32 = 44_100.0;
const BLOCK: Duration = Duration::from_nanos(5_804_989);
const VOICES: usize = 128;

/// A tiny deterministic "MIDI file": xorshift decides when notes start and how long they last.
struct Score(u64);
impl Score {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Voice layout: refs [oscillator, envelope, delay line], data [kind, end block, phase].
fn voice(b: &mut Block<'_>, score: &mut Score, now: u64, kind: u64) -> Option<Gc> {
    let v = b.alloc(3, 3).ok()?;
    let osc = b.alloc(0, 2).ok()?;
    let env = b.alloc(0, 4).ok()?;
    let freq = match kind {
        0 => 110.0 * 2f32.powf(score.next() * 4.0), // note
        1 => 50.0 + score.next() * 1950.0,          // grain
        _ => 50.0 + score.next() * 350.0,           // plucked string
    };
    b.set_data(osc, 0, (freq / RATE).to_bits() as u64).unwrap();
    b.set_ref(v, 0, Some(osc)).unwrap();
    b.set_ref(v, 1, Some(env)).unwrap();
    if kind == 2 {
        let line = b.alloc_atomic((RATE / freq) as usize * 4).ok()?;
        for s in b.samples(line)?.iter_mut() {
            *s = score.next() * 2.0 - 1.0;
        }
        b.set_atomic(v, 2, Some(line)).unwrap();
    }
    let blocks = 20 + (score.next() * 150.0) as u64;
    b.set_data(v, 0, kind).unwrap();
    b.set_data(v, 1, now + blocks).unwrap();
    Some(v)
}

fn render(b: &mut Block<'_>, v: Gc, out: &mut [f32; FRAMES]) {
    if let Some(line) = b.get_atomic(v, 2).unwrap() {
        // Karplus-Strong: average two neighbours back into the line.
        let mut at = b.data(v, 2).unwrap() as usize;
        let tab = b.samples(line).unwrap();
        for o in out.iter_mut() {
            let next = (at + 1) % tab.len();
            let s = tab[at];
            tab[at] = 0.498 * (s + tab[next]);
            *o += 0.2 * s;
            at = next;
        }
        b.set_data(v, 2, at as u64).unwrap();
    } else {
        let osc = b.get_ref(v, 0).unwrap().unwrap();
        let inc = f32::from_bits(b.data(osc, 0).unwrap() as u32);
        let mut phase = f32::from_bits(b.data(osc, 1).unwrap() as u32);
        for o in out.iter_mut() {
            *o += if phase < 0.5 { 0.05 } else { -0.05 };
            phase = (phase + inc).fract();
        }
        b.set_data(osc, 1, phase.to_bits() as u64).unwrap();
    }
}

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    let (mut audio, collector) = start(Config {
        heap_bytes: 1 << 20,
        atomic_bytes: 16 << 20,
        ..Config::default()
    })
    .expect("collector");
    let blocks = (seconds / BLOCK.as_secs_f64()) as u64;
    let mut score = Score(0x1234_5678);
    let t0 = Instant::now();
    let mut peak = 0.0f32;
    for n in 0..blocks {
        let due = t0 + BLOCK * n as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let mut b = audio.begin_block();
        let table = match b.root(0).unwrap() {
            Some(t) => t,
            None => {
                let t = b.alloc(VOICES, 0).expect("voice table");
                b.set_root(0, Some(t)).unwrap();
                t
            }
        };
        let part = n as f64 / blocks as f64;
        // This block's births, counted rather than collected: the audio loop allocates
        // nothing outside the collected heaps.
        let notes = usize::from(score.next() < 0.03);
        let grains = usize::from((0.1..0.3).contains(&part) && score.next() < 0.3);
        let plucks = if (0.6..0.8).contains(&part) { 2 } else { 0 };
        let births = std::iter::repeat_n(0, notes) // note-on
            .chain(std::iter::repeat_n(1, grains)) // grain cloud
            .chain(std::iter::repeat_n(2, plucks)); // plucked strings
        for kind in births {
            if let Some(slot) = (0..VOICES).find(|&i| b.get_ref(table, i).unwrap().is_none()) {
                if let Some(v) = voice(&mut b, &mut score, n, kind) {
                    b.set_ref(table, slot, Some(v)).unwrap();
                }
            }
        }
        let mut out = [0.0f32; FRAMES];
        for slot in 0..VOICES {
            let Some(v) = b.get_ref(table, slot).unwrap() else {
                continue;
            };
            if b.data(v, 1).unwrap() <= n {
                b.set_ref(table, slot, None).unwrap(); // note-off: its graph is garbage now
            } else {
                render(&mut b, v, &mut out);
            }
        }
        peak = out.iter().fold(peak, |p, s| p.max(s.abs()));
    }
    let m = audio.stats();
    let s = collector.stats();
    println!("{blocks} blocks, peak {peak:.2}");
    println!(
        "audio thread: max wait {:?}, waited in {} blocks; {} objects and {} delay lines allocated",
        m.max_blocking, m.blocked_blocks, m.objects_allocated, m.atomic_allocated
    );
    println!(
        "collector: {} cycles, {} objects and {} delay lines freed; partial snapshot avg {:?}, \
         full snapshot avg {:?} (padded to the prediction {:?}; p(M) = {:.2} MB/ms, {:.2} in \
         the thesis' MB of 2^20 bytes)",
        s.cycles,
        s.objects_freed,
        s.atomic_freed,
        s.partial_snapshot.average(),
        s.full_snapshot.average(),
        s.predicted_full_snapshot,
        // Bytes per nanosecond are 10^6 bytes per millisecond.
        s.copy_rate,
        s.copy_rate * 1e6 / (1u64 << 20) as f64
    );
}
