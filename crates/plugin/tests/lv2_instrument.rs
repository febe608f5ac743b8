//! An instrument plugin plays notes: mda EPiano gets a held A4 through its MIDI atom input
//! and sounds from the note's frame, at 440 Hz. The same path runs under the guard.

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod lv2_support;

use downbeat_graph::{AudioMut, AudioRef, Node, NodeConfig, NoteEvent, ProcessContext};
use downbeat_plugin::lv2::atom::NOTE_CAPACITY;
use downbeat_plugin::lv2::{ControlValue, Lv2Node};
use lv2_support::{render, require_plugin};

downbeat_rt::install_guard_allocator!();

const EPIANO: &str = "http://drobilla.net/plugins/mda/EPiano";
const RATE: u32 = 48000;
const CFG: NodeConfig = NodeConfig {
    sample_rate: RATE,
    max_block: 256,
};

fn epiano() -> Lv2Node {
    // random_tuning detunes every note by a random amount: off, for a pitch test.
    let values = [("random_tuning".to_string(), ControlValue::Number(0.0))];
    Lv2Node::load(EPIANO, &values, &CFG).unwrap()
}

/// Frequency of the strongest period in `x` between 50 and 2000 Hz, by autocorrelation with
/// parabolic interpolation around the peak.
fn pitch(x: &[f32]) -> f32 {
    let corr = |lag: usize| -> f32 { x.iter().zip(&x[lag..]).map(|(a, b)| a * b).sum() };
    let (lo, hi) = (RATE as usize / 2000, RATE as usize / 50);
    let lags: Vec<f32> = (0..=hi + 1)
        .map(|l| if l < lo { 0.0 } else { corr(l) })
        .collect();
    // The first peak that comes close to the best (the fundamental, not a multiple of it).
    let best = lags[lo..=hi].iter().copied().fold(f32::MIN, f32::max);
    let lag = (lo..=hi)
        .find(|&l| lags[l] >= 0.9 * best && lags[l] >= lags[l - 1] && lags[l] >= lags[l + 1])
        .unwrap();
    let (a, b, c) = (lags[lag - 1], lags[lag], lags[lag + 1]);
    let shift = 0.5 * (a - c) / (a - 2.0 * b + c);
    RATE as f32 / (lag as f32 + shift)
}

#[test]
fn a_held_note_sounds_from_its_frame_at_its_pitch() {
    require_plugin(EPIANO);
    let mut piano = epiano();
    assert!(piano.plays_notes());
    assert_eq!((piano.input_channels(), piano.output_channels()), (0, 2));
    // Frame 1000 is inside the fourth 256-frame block: the note waits three blocks.
    piano
        .note(
            1000,
            NoteEvent::On {
                channel: 0,
                note: 69.0,
                velocity: 0.8,
            },
        )
        .unwrap();
    let frames = RATE as usize;
    let out = render(Box::new(piano), 0, &vec![0.0; frames], RATE, 256);
    let left: Vec<f32> = out.iter().step_by(2).copied().collect();
    assert!(
        left[..1000].iter().all(|&s| s == 0.0),
        "sound before the note's frame"
    );
    let first = left.iter().position(|&s| s.abs() > 1e-4).unwrap();
    assert!(
        (1000..1010).contains(&first),
        "first sound at frame {first}"
    );
    let f = pitch(&left[6000..6000 + 9600]);
    assert!((f / 440.0 - 1.0).abs() < 0.015, "A4 played at {f} Hz");
}

#[test]
fn notes_reach_the_plugin_without_allocating_or_locking() {
    require_plugin(EPIANO);
    let mut piano = epiano();
    let mut out = vec![0.0f32; 2 * 256];
    let ctx = |position| downbeat_graph::ProcessContext::new(RATE, 256, position);
    let silent = vec![0.0f32; 0];
    piano.process(
        &ctx(0),
        downbeat_graph::AudioRef::new(&silent, 0, 256, 256),
        downbeat_graph::AudioMut::new(&mut out, 2, 256, 256),
    );
    let report = downbeat_rt::guard::check(|| {
        for block in 1..20u64 {
            for (k, note) in [60.0, 64.0, 67.0].into_iter().enumerate() {
                let event = if block % 2 == 1 {
                    NoteEvent::On {
                        channel: 0,
                        note,
                        velocity: 0.7,
                    }
                } else {
                    NoteEvent::Off { channel: 0, note }
                };
                piano.note(17 * k, event).unwrap();
            }
            piano.process(
                &ctx(block * 256),
                downbeat_graph::AudioRef::new(&silent, 0, 256, 256),
                downbeat_graph::AudioMut::new(&mut out, 2, 256, 256),
            );
        }
    });
    report.assert_clean();
}

/// One 256-frame block of `piano` at `block`, into `out` (stereo).
fn play_block(piano: &mut Lv2Node, block: u64, out: &mut [f32]) {
    let ctx = ProcessContext::new(RATE, 256, block * 256);
    piano.process(
        &ctx,
        AudioRef::new(&[], 0, 256, 256),
        AudioMut::new(out, 2, 256, 256),
    );
}

#[test]
fn a_full_note_queue_reaches_the_plugin_without_faulting() {
    // The first notes a node queues land in memory it allocated at load and never used:
    // unless the node touched it then, the audio thread takes the page faults. A queue
    // filled to capacity reaches every page of it (and most of the MIDI port's buffer), so
    // this catches what the three-note blocks above catch only when the allocator happens
    // to put their first bytes on a fresh page.
    require_plugin(EPIANO);
    let mut piano = epiano();
    let mut out = vec![0.0f32; 2 * 256];
    play_block(&mut piano, 0, &mut out);
    let report = downbeat_rt::guard::check(|| {
        for k in 0..NOTE_CAPACITY {
            let note = 36.0 + (k % 48) as f32;
            let event = if k % 2 == 0 {
                NoteEvent::On {
                    channel: 0,
                    note,
                    velocity: 0.5,
                }
            } else {
                NoteEvent::Off { channel: 0, note }
            };
            piano.note(k * 256 / NOTE_CAPACITY, event).unwrap();
        }
        play_block(&mut piano, 1, &mut out);
        play_block(&mut piano, 2, &mut out);
    });
    report.assert_clean();
}
