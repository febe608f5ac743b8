//! Live MIDI bytes, as a driver's MIDI port delivers them, through [`MidiInput`] into the
//! schedule: each note at its frame, and the whole path (parsing, queueing, voices,
//! rendering) real-time safe. The JACK device runs this path in its process callback
//! (`tests/jack.rs` drives it with `jack_midiseq`).

use downbeat::midi::MidiInput;
use downbeat::project::Project;
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

const SYNTH: &str = "block_size = 256\nedges = [\"s -> out\"]\n[nodes.s]\ntype = \"synth\"\n\
                     [nodes.out]\ntype = \"output\"\n";

#[test]
fn live_midi_bytes_play_at_their_frames_and_the_path_is_real_time_safe() {
    let p = Project::parse(SYNTH, "synth.toml").unwrap();
    let mut s = p.build().unwrap();
    let mut midi = MidiInput::new(64);
    s.process(256);
    let mut first_sound = None;
    let report = guard::check(|| {
        for block in 0..40u64 {
            let at = 256 + block * 256;
            // Note on, running-status-free note off, pedal, bend, program change (ignored),
            // a system message (ignored), and bytes that are not MIDI (ignored).
            midi.push(at + 17, &[0x90, 60 + (block % 24) as u8, 100]);
            midi.push(at + 100, &[0x80, 60 + ((block + 20) % 24) as u8, 0]);
            midi.push(at + 120, &[0xB0, 64, if block % 2 == 0 { 127 } else { 0 }]);
            midi.push(at + 130, &[0xE0, 0, 0x50]);
            midi.push(at + 140, &[0xC0, 5]);
            midi.push(at + 150, &[0xF8]);
            midi.push(at + 160, &[0x42]);
            midi.deliver(&mut s);
            s.process(256);
            if first_sound.is_none() {
                first_sound = s.output().channel(0).iter().position(|&x| x != 0.0);
            }
        }
    });
    report.assert_clean();
    assert_eq!(first_sound, Some(17), "the first note starts at its frame");
    assert_eq!(midi.ignored(), 3 * 40);
    assert_eq!(midi.dropped(), 0);
    assert_eq!(s.event_stats().refused, 0);
}
