//! MIDI from another JACK client reaches the engine through the JACK device while the
//! schedule is hot-swapped 50 times: every note arrives, at the frame of its cycle that the
//! sender stamped it with, on the running schedule's instruments. Needs a real
//! `jackd -d dummy` server (run by `crates/engine/ci.sh` with `--features jack`); fails
//! without one.
#![cfg(feature = "jack")]

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use downbeat::device::{Device, Jack, RunLength};
use downbeat::project::Project;
use downbeat::swap::SwapError;
use downbeat::Engine;
use downbeat_graph::Schedule;
use jack::{Client, ClientOptions, Control, MidiOut, ProcessScope, RawMidi};

#[path = "support/marker.rs"]
mod marker;

const PERIOD: u64 = 256;
/// The frame, in its cycle, at which the sender stamps each note.
const OFFSET: u32 = 100;
const NOTES: u64 = 150;
const SWAPS: u64 = 50;

/// One marker, `m`.
const ONE: &str = "edges = [\"m -> out\"]\n[nodes.m]\ntype = \"marker\"\n\
                   [nodes.out]\ntype = \"output\"\nchannels = 1\n";
/// `m` at another position, and a second marker.
const TWO: &str = "edges = [\"pre -> m -> out\", \"m2 -> out\"]\n\
                   [nodes.pre]\ntype = \"sine\"\namp = 0.0\nchannels = 1\n\
                   [nodes.m]\ntype = \"marker\"\n[nodes.m2]\ntype = \"marker\"\n\
                   [nodes.out]\ntype = \"output\"\nchannels = 1\n";

fn build(src: &str) -> Schedule {
    marker::register();
    Project::parse(src, "jack_midi.toml")
        .unwrap()
        .build()
        .unwrap()
}

/// A `jackd -d dummy` of this test's own, stopped (SIGTERM, so it unregisters) on drop, also
/// when the test fails (panics): no server outlives the test.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let t = Instant::now();
        while let Ok(None) = self.0.try_wait() {
            if t.elapsed() > Duration::from_secs(5) {
                let _ = self.0.kill();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn the_note(i: u64) -> u8 {
    (1 + i % 60) as u8
}

#[test]
fn notes_from_another_jack_client_all_arrive_through_fifty_hot_swaps() {
    let name = format!("downbeat-inbox-{}", std::process::id());
    // Before any thread of this test binary talks to JACK: the clients below find the
    // server by this name.
    std::env::set_var("JACK_DEFAULT_SERVER", &name);
    std::env::set_var("JACK_NO_AUDIO_RESERVATION", "1");
    let mut server = Server(
        Command::new("jackd")
            .args(["-n", &name, "-d", "dummy", "-r", "48000", "-p", "256"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("jackd is installed (apt-get install jackd2)"),
    );
    let t = Instant::now();
    let (source, _) = loop {
        match Client::new("inbox-src", ClientOptions::NO_START_SERVER) {
            Ok(c) => break c,
            Err(e) => {
                if let Some(status) = server.0.try_wait().unwrap() {
                    panic!("jackd {name} exited as it started ({status})");
                }
                assert!(
                    t.elapsed() < Duration::from_secs(20),
                    "jackd {name} took no client within 20 s: {e}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    };

    // The sender: once its port is connected, a note on every second cycle at `OFFSET`.
    let mut port = source.register_port("out", MidiOut::default()).unwrap();
    let sent = Arc::new(AtomicU64::new(0));
    let (count, mut cycle) = (Arc::clone(&sent), 0u64);
    let process = jack::contrib::ClosureProcessHandler::new(
        move |_: &Client, ps: &ProcessScope| -> Control {
            let connected = port.connected_count().unwrap_or(0) > 0;
            // Every cycle: a port's buffer holds what was written until it is cleared.
            let mut w = port.writer(ps);
            let n = count.load(Ordering::Relaxed);
            if connected && n < NOTES {
                if cycle % 2 == 0 {
                    let bytes = [0x90, the_note(n), 100];
                    if w.write(&RawMidi {
                        time: OFFSET,
                        bytes: &bytes,
                    })
                    .is_ok()
                    {
                        count.store(n + 1, Ordering::Relaxed);
                    }
                }
                cycle += 1;
            }
            Control::Continue
        },
    );
    let active = source.activate_async((), process).unwrap();

    // The swapper: 50 schedules, alternately with two instruments and one.
    let mut engine = Engine::new(build(ONE));
    let (mut sender, mut collector) = engine.swap_channel(2);
    let schedules: Vec<Schedule> = (0..SWAPS)
        .map(|k| build(if k % 2 == 0 { TWO } else { ONE }))
        .collect();
    let started = Arc::new(AtomicBool::new(false));
    let go = Arc::clone(&started);
    let sent_by_swapper = Arc::clone(&sent);
    let swapper = std::thread::spawn(move || {
        // Swaps while the notes come: from the first note to about the last.
        while sent_by_swapper.load(Ordering::Relaxed) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        go.store(true, Ordering::Relaxed);
        for mut s in schedules {
            loop {
                collector.collect();
                match sender.send(s) {
                    Ok(()) => break,
                    Err(SwapError::Full(back)) => {
                        s = *back;
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        std::thread::sleep(Duration::from_millis(100));
        collector.collect();
    });

    let wav = std::env::temp_dir().join(format!("downbeat-jack-midi-{}.wav", std::process::id()));
    // As the `downbeat` binary does: the rate first, from the client the run then plays with.
    assert_eq!(Jack::server_sample_rate("downbeat-inbox").unwrap(), 48_000);
    let mut device =
        Jack::new("downbeat-inbox", None, Some(wav.clone())).midi_in(Some("inbox-src:".into()));
    let run = device
        .run(engine, RunLength::seconds(5.0, 48_000))
        .expect("the JACK run succeeds");
    swapper.join().unwrap();
    let _ = active.deactivate();
    drop(server);

    assert!(started.load(Ordering::Relaxed));
    assert_eq!(
        sent.load(Ordering::Relaxed),
        NOTES,
        "the sender sent every note"
    );
    assert_eq!(run.engine.swaps(), SWAPS, "every schedule was swapped in");
    assert_eq!(run.engine.midi_input().dropped(), 0);
    let x: Vec<f32> = hound::WavReader::open(&wav)
        .unwrap()
        .samples::<f32>()
        .map(Result::unwrap)
        .collect();
    let onsets: Vec<(usize, f32)> = x
        .iter()
        .enumerate()
        .filter(|(_, &v)| v != 0.0)
        .map(|(i, &v)| (i, v))
        .collect();
    assert_eq!(
        onsets.len() as u64,
        NOTES,
        "every note is heard once: {onsets:?}"
    );
    let mut instruments = [0; 3];
    for (i, &(frame, value)) in onsets.iter().enumerate() {
        assert_eq!(
            frame as u64 % PERIOD,
            u64::from(OFFSET),
            "note {i} at frame {frame}, not at its offset in the cycle"
        );
        let note = f32::from(the_note(i as u64));
        let copies = value / note;
        assert!(
            copies == 1.0 || copies == 2.0,
            "note {i}: {value} is not note {note} on one or two instruments"
        );
        instruments[copies as usize] += 1;
    }
    assert!(
        instruments[1] > 0 && instruments[2] > 0,
        "notes were heard by both schedules: {instruments:?}"
    );
}
