//! The audio-thread paths of the graph and engine, run under the guard: no allocation, free,
//! lock, page fault or system call (except the pool's counted wake of parked workers).

use downbeat::device::DeviceSample;
use downbeat::nodes::{Capture, Mix, MixSettings, Output, Sine, SineSettings};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::{CompileConfig, Graph, Schedule};
use downbeat_rt::guard::{self, Allow, Options};

downbeat_rt::install_guard_allocator!();

mod support;

fn project(name: &str) -> Project {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/projects/");
    Project::load(format!("{path}{name}")).unwrap()
}

#[test]
fn schedule_process_of_fanin84_is_clean() {
    let p = project("fanin84.toml");
    let mut s = p.build().unwrap();
    for _ in 0..200 {
        s.process(p.block_size);
    }
    let report = guard::check(|| {
        for _ in 0..200 {
            s.process(p.block_size);
        }
    });
    support::assert_complete(&report);
    report.assert_clean();
}

#[test]
fn parallel_engine_makes_no_syscall_but_the_counted_wake() {
    let mut engine = Engine::new(project("fanin84.toml").build().unwrap());
    engine.set_threads(2);
    let mut block = vec![0.0f32; engine.block_size() * engine.channels()];
    for _ in 0..100 {
        engine.process(&mut block);
    }
    let wakes_before = engine.pool_wakes();
    let blocks = 300;
    let report = guard::check_with(&Options::new().allow(Allow::FutexWake), || {
        for _ in 0..blocks {
            engine.process(&mut block);
        }
    })
    .1;
    support::assert_complete(&report);
    report.assert_clean();
    let wakes = engine.pool_wakes() - wakes_before;
    let futex = report.allowed_syscall_count("futex");
    assert!(
        futex <= wakes,
        "{futex} futex calls but only {wakes} counted wakes"
    );
    assert!(wakes <= blocks, "at most one wake per worker per callback");
}

/// A random small graph: `n` sines of random pitch into a mix.
fn variant(seed: u64, cfg: CompileConfig) -> Schedule {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut g = Graph::new();
    let mix = g.add(
        "mix",
        Mix::new(
            2,
            &MixSettings {
                gain_db: -6.0,
                ..MixSettings::default()
            },
        ),
    );
    for k in 0..1 + next() % 6 {
        let freq = 100.0 + (next() % 2000) as f64;
        let s = g.add(
            format!("s{k}"),
            Sine::new(
                2,
                cfg.sample_rate,
                &SineSettings {
                    freq,
                    amp: 0.1,
                    ..SineSettings::default()
                },
            ),
        );
        g.connect(s, mix);
    }
    let out = g.add("out", Output::new(2));
    g.connect(mix, out);
    g.set_output(out);
    g.compile(cfg).unwrap()
}

#[test]
fn a_thousand_hot_swaps_while_running_drop_no_block_and_stay_clean() {
    let cfg = CompileConfig {
        sample_rate: 48_000,
        max_block: 64,
    };
    let mut engine = Engine::new(variant(0, cfg));
    engine.set_threads(2);
    let (mut sender, mut collector) = engine.swap_channel(8);
    let mut block = vec![0.0f32; 64 * 2];
    engine.process(&mut block);
    const EDITS: u64 = 1000;
    let wakes_before = engine.pool_wakes();

    let (blocks, report) = std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut sent = 0;
            while sent < EDITS {
                let mut s = variant(sent + 1, cfg);
                loop {
                    collector.collect();
                    match sender.send(s) {
                        Ok(()) => break,
                        Err(downbeat::swap::SwapError::Full(back)) => {
                            s = *back;
                            std::thread::sleep(std::time::Duration::from_micros(50));
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                sent += 1;
            }
            // Keep collecting until the engine has taken the last one.
            while collector.pending() > 0 || sent > 0 && collector.collect() > 0 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        guard::check_with(&Options::new().allow(Allow::FutexWake), || {
            let mut blocks = 0u64;
            let mut silent = 0u64;
            while engine.swaps() < EDITS {
                engine.process(&mut block);
                blocks += 1;
                if block.iter().all(|&s| s == 0.0) {
                    silent += 1;
                }
                assert!(block.iter().all(|s| s.is_finite()));
                // Bounded: the control thread sends continuously.
                assert!(blocks < 50_000_000, "swaps stalled at {}", engine.swaps());
            }
            (blocks, silent)
        })
    });
    support::assert_complete(&report);
    report.assert_clean();
    // The allow-list admits any futex wake; only the pool's counted wakes are legitimate.
    let wakes = engine.pool_wakes() - wakes_before;
    let futex = report.allowed_syscall_count("futex");
    assert!(
        futex <= wakes,
        "{futex} futex calls but only {wakes} counted wakes"
    );
    let (blocks, silent) = blocks;
    assert_eq!(engine.swaps(), EDITS);
    assert_eq!(
        engine.summary().blocks,
        blocks + 1,
        "every process call produced one block"
    );
    assert_eq!(silent, 0, "a swap produced a silent block");
}

#[test]
fn driver_callback_renderer_is_clean() {
    use downbeat::device::{Renderer, Take};
    // The body of an interleaved driver callback: render, record, hand out the frames.
    let engine = Engine::new(project("hello.toml").build().unwrap());
    let recording = Take::new(48_000, engine.channels());
    let mut r = Renderer::new(engine, 48_000).record(recording.clone());
    for _ in 0..20 {
        r.render(256);
    }
    let report = guard::check(|| {
        for n in [256, 1024, 77, 256, 4096] {
            let block = r.render(n);
            assert_eq!(block.len(), n * 2);
        }
    });
    support::assert_complete(&report);
    report.assert_clean();
    assert_eq!(recording.frames(), 20 * 256 + 256 + 1024 + 77 + 256 + 4096);
}

/// A project whose output is its input through a gain of 0.5: what a callback captures must
/// come out at half the level, in the same frames and channels.
fn through_gain(capture: &Capture) -> Engine {
    let text = "block_size = 128\nedges = [\"mic -> g -> out\"]\n[nodes.mic]\ntype = \"input\"\n\
                [nodes.g]\ntype = \"gain\"\ngain = 0.5\n[nodes.out]\ntype = \"output\"\n";
    let p = Project::parse(text, "through.toml").unwrap();
    let mut engine = Engine::new(capture.connect(|| p.build()).unwrap());
    engine.set_capture(capture.clone());
    engine
}

/// Deterministic, different on every channel and frame.
fn signal(frames: usize, ch: usize, seed: usize) -> Vec<f32> {
    (0..frames * ch)
        .map(|i| ((i * 7919 + seed * 104_729) % 2001) as f32 / 1000.0 - 1.0)
        .collect()
}

#[test]
fn planar_driver_callback_with_input_and_port_writes_is_clean() {
    use downbeat::device::{Renderer, Take, MAX_CALLBACK_FRAMES};
    // The whole JACK process callback: read the input ports into the capture, render in
    // pieces, record both sides, write every output port buffer.
    let capture = Capture::new(2, 128);
    let engine = through_gain(&capture);
    let total = 64 * 1024;
    let (played, heard) = (Take::new(total, 2), Take::new(total, 2));
    let mut r = Renderer::new(engine, total as u64)
        .record(played.clone())
        .record_input(heard.clone());
    let longest = MAX_CALLBACK_FRAMES + 4096;
    // Port buffers as a driver would hand them: one per channel, longer than one piece.
    let mut outs: Vec<Vec<f32>> = (0..2)
        .map(|_| downbeat_graph::prefaulted(longest))
        .collect();
    let ins: Vec<Vec<f32>> = (0..2).map(|c| signal(longest, 1, c + 1)).collect();
    r.render_planar(256, ins.as_slice(), outs.as_mut_slice());
    let sizes = [256, 1024, 77, longest, 512];
    let report = guard::check(|| {
        for n in sizes {
            r.render_planar(n, ins.as_slice(), outs.as_mut_slice());
        }
    });
    support::assert_complete(&report);
    report.assert_clean();
    // The last callback: each output port is its input port at half the level, frame for
    // frame; and the recordings say the same.
    let last = *sizes.last().unwrap();
    for c in 0..2 {
        let want: Vec<f32> = ins[c][..last].iter().map(|s| s * 0.5).collect();
        assert!(
            outs[c][..last] == want[..],
            "port {c} is not its input halved"
        );
    }
    let (p, h) = (played.to_vec(), heard.to_vec());
    assert_eq!(p.len(), h.len());
    assert!(
        p.iter().zip(&h).all(|(o, i)| *o == 0.5 * i),
        "recordings disagree"
    );
    assert!(h.iter().any(|&s| s != 0.0));
}

/// `--record-input`: the run records what its `input` nodes hear through a `RecordTap`
/// into a writer thread (`device::takes`), here beside `--out`'s, in a planar driver
/// callback. With a writer that keeps up, the file holds the capture frame for frame; with
/// one too slow for its ring, the tap counts the frames it cannot hand over as lost. Both
/// paths run under the guard.
#[test]
fn record_input_tap_is_clean_when_the_writer_keeps_up_and_when_it_falls_behind() {
    use downbeat::device::{Renderer, MAX_CALLBACK_FRAMES};
    use downbeat::record::{RecordOptions, Recorder, WhenFull};
    use std::time::Duration;

    let dir = std::env::temp_dir().join(format!("downbeat-rt-guard-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let slow = RecordOptions {
        ring_seconds: 0.05,
        write_pause: Duration::from_secs(10),
        ..RecordOptions::default()
    };
    let longest = MAX_CALLBACK_FRAMES + 4096;
    let sizes = [256, 1024, 77, longest, 512];
    let total: usize = 256 + sizes.iter().sum::<usize>();
    let ins: Vec<Vec<f32>> = (0..2).map(|c| signal(longest, 1, c + 5)).collect();
    for (name, options) in [
        ("keeps up", RecordOptions::default()),
        ("falls behind", slow),
    ] {
        let capture = Capture::new(2, 128);
        let engine = through_gain(&capture);
        let heard_path = dir.join(format!("{}-input.wav", name.replace(' ', "-")));
        let played_path = dir.join(format!("{}-out.wav", name.replace(' ', "-")));
        let start = |path: &std::path::Path, options: &RecordOptions| {
            Recorder::start(path, 2, 48_000, options, WhenFull::CountLost).unwrap()
        };
        let (heard, input_tap) = start(&heard_path, &options);
        let (played, out_tap) = start(&played_path, &RecordOptions::default());
        let mut r = Renderer::new(engine, total as u64)
            .record_stream(out_tap)
            .record_input_stream(input_tap);
        let mut outs: Vec<Vec<f32>> = (0..2)
            .map(|_| downbeat_graph::prefaulted(longest))
            .collect();
        r.render_planar(256, ins.as_slice(), outs.as_mut_slice());
        let report = guard::check(|| {
            for n in sizes {
                r.render_planar(n, ins.as_slice(), outs.as_mut_slice());
            }
        });
        support::assert_complete(&report);
        assert!(report.is_clean(), "{name}:\n{report}");
        assert!(r.done(), "{name}: the run is {} frames long", r.frames());
        drop(r); // ends the taps: the writers drain what is queued
        let played = played.finish().unwrap();
        assert_eq!(
            (played.frames, played.lost_frames),
            (total as u64, 0),
            "{name}"
        );
        if name == "falls behind" {
            assert!(
                heard.lost_frames() > 0,
                "the ring never filled, so the lost path was not under the guard"
            );
            drop(heard); // its thread ends after the pause; nothing waits for it
            continue;
        }
        let recorded = heard.finish().unwrap();
        assert_eq!((recorded.frames, recorded.lost_frames), (total as u64, 0));
        // Every callback read its ports from the start: the capture is each one's first
        // frames, interleaved.
        let want: Vec<f32> = std::iter::once(256)
            .chain(sizes)
            .flat_map(|n| (0..n).flat_map(|f| [ins[0][f], ins[1][f]]))
            .collect();
        let mut file = hound::WavReader::open(&heard_path).unwrap();
        let got: Vec<f32> = file.samples::<f32>().map(Result::unwrap).collect();
        support::assert_bit_identical(&got, &want, "the recorded input");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn interleaved_duplex_callbacks_are_clean() {
    use downbeat::device::{CaptureSender, Renderer};
    // The system device's two callbacks: the input one queues what the card captured (here
    // 16-bit), the output one renders into the card's buffer (16-bit, 3 channels for a
    // 2-channel project: the third is silent), the `input` nodes hearing the queue.
    let capture = Capture::new(2, 128);
    let (mut sender, queue) = CaptureSender::new(2, 48_000);
    let mut r = Renderer::new(through_gain(&capture), 1 << 20).input_queue(queue);
    let captured: Vec<i16> = signal(8192, 2, 3)
        .iter()
        .map(|s| (s * 16384.0) as i16)
        .collect();
    let mut card = vec![0i16; 3 * 8192];
    sender.push(&captured[..2 * 100]);
    r.fill_interleaved(&mut card[..3 * 100], 3);
    let sizes = [441, 128, 4096, 37];
    let mut at = 2 * 100;
    let (ok, report) = guard::check_with(&Options::new(), || {
        let mut ok = true;
        for n in sizes {
            ok &= sender.push(&captured[at..at + 2 * n]) == 0;
            r.fill_interleaved(&mut card[..3 * n], 3);
            at += 2 * n;
        }
        ok
    });
    support::assert_complete(&report);
    report.assert_clean();
    assert!(ok, "the queue dropped frames");
    // The last callback played the last frames captured, halved, in the same frame.
    let n = *sizes.last().unwrap();
    let heard = &captured[at - 2 * n..at];
    for (f, out) in card[..3 * n].chunks_exact(3).enumerate() {
        for c in 0..2 {
            let want = i16::from_f32((heard[2 * f + c] as f32 / 32768.0) * 0.5);
            assert!(
                (out[c] - want).abs() <= 1,
                "frame {f} channel {c}: {} vs {want}",
                out[c]
            );
        }
        assert_eq!(out[2], 0, "the device's third channel is silent");
    }
    assert_eq!(r.input_gaps(), 0);
}

#[test]
fn output_watch_in_the_callback_is_clean() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    let delivered = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&delivered);
    // The engine feeds its watchers itself, after every block: the one path every device uses.
    let mut engine = Engine::new(project("hello.toml").build().unwrap());
    let display = engine.watch_output().follow(move |w| {
        seen.store(w.output().frames, Ordering::Relaxed);
    });
    // A dropped watcher's tap stays in the engine, skipped.
    drop(engine.watch());
    let mut buf = vec![0.0f32; engine.block_size() * engine.channels()];
    engine.process(&mut buf); // warm-up outside the guard
    let report = guard::check(|| {
        for _ in 0..500 {
            engine.process(&mut buf);
        }
    });
    support::assert_complete(&report);
    report.assert_clean();
    let watcher = display.stop();
    let frames = 501 * engine.block_size() as u64;
    assert_eq!(
        delivered.load(Ordering::Relaxed),
        frames,
        "the last values reach the thread"
    );
    let output = watcher.output();
    assert!(output.peak > 0.0 && output.load > 0.0, "{output:?}");
}

/// A constant through a gain and a metronome, in a song with a ramp, a signature change, a
/// loop and automation in beats (the song's own timeline): what the transport's guard tests
/// play.
fn song() -> Project {
    let text = format!(
        "{}\n[nodes.m]\ntype = \"metronome\"\nchannels = 1\n\n[tempo]\nbpm = 240\n\
         changes = [{{ beat = 4, bpm = 400, ramp = 4 }}, {{ beat = 12, signature = \"7/8\" }}]\n\
         [transport]\nloop = [2, 16]\n\
         [[automation]]\nnode = \"g\"\nparam = \"gain\"\ntime = \"beats\"\n\
         points = [[3, 0.5], [5, 0.9, \"linear\"], [9, 0.7]]\n",
        support::constant_through_gain(64).replace(
            "edges = [\"s -> g -> out\"]",
            "edges = [\"s -> g -> out\", \"m -> out\"]"
        )
    );
    Project::parse(&text, "song.toml").unwrap()
}

/// The transport's audio-thread paths: blocks cut at tempo points, signature changes and
/// loop wraps, the musical position every node is handed, a metronome clicking, automation
/// in beats taken from the song's timeline (looked up again after a locate), events
/// waiting for their beats and transport commands (stop, locate, play, loop, live tempo
/// changes) taken and carried out, and a locate past the song's end refused, all under the
/// guard.
#[test]
fn the_transport_is_clean() {
    use downbeat::control::When;
    use downbeat_graph::time::TransportCommand;
    let p = song();
    let mut engine = Engine::new(p.build().unwrap());
    let mut control = engine.controller(256);
    let mut block = vec![0.0f32; 100];
    for _ in 0..50 {
        engine.process(&mut block);
    }
    let wraps_before = engine.schedule().transport().song_frame();
    let undelivered_before = engine.undelivered_events();
    let report = guard::check(|| {
        for round in 0..400u32 {
            if round % 40 == 0 {
                let beat = 3.0 + f64::from(round % 11);
                control.step(When::Beat(beat), "g", "gain", 0.5).unwrap();
                control.step(When::NextBar, "g", "gain", 1.0).unwrap();
                control.step(When::NextBeat, "g", "gain", 0.8).unwrap();
            }
            match round {
                100 => control.transport(When::NextBar, TransportCommand::Stop),
                // Past the song's last frame: refused on the audio thread and counted.
                120 => control.transport(When::Now, TransportCommand::LocateBeat(1e30)),
                150 => control.transport(When::Now, TransportCommand::LocateBeat(5.5)),
                160 => control.transport(When::Beat(6.0), TransportCommand::Loop(4.0, 14.0)),
                170 => control.transport(When::Now, TransportCommand::Play),
                200 => control.transport(
                    When::NextBeat,
                    TransportCommand::Tempo {
                        bpm: 200.0,
                        ramp: 3.0,
                    },
                ),
                260 => control.transport(
                    When::Now,
                    TransportCommand::Tempo {
                        bpm: 90.0,
                        ramp: 0.0,
                    },
                ),
                _ => Ok(()),
            }
            .unwrap();
            engine.process(&mut block);
        }
    });
    support::assert_complete(&report);
    report.assert_clean();
    let s = engine.schedule();
    assert!(s.transport().is_playing());
    assert_eq!(s.transport().looping(), Some((4.0, 14.0)));
    assert_eq!(
        s.transport().position().bpm,
        90.0,
        "the live tempo changes were made"
    );
    assert_ne!(s.transport().song_frame(), wraps_before);
    assert!(s.event_stats().applied >= 10, "{:?}", s.event_stats());
    assert_eq!(
        engine.undelivered_events(),
        undelivered_before + 1,
        "the locate past the end was refused"
    );
}

/// What the JACK device does on its process thread when the song follows JACK's transport
/// (`--transport jack`, `jack-master`), without JACK: the requests from a control thread
/// taken, the song's transport made to follow a JACK position that plays, stops, locates
/// (stopped and rolling) and changes tempo ([`follow`]), the cycle processed, and the
/// bar/beat/tick a timebase master publishes ([`timebase_bbt`]), all under the guard.
/// JACK's own calls (`jack_transport_query`, `_start`, `_stop`, `_locate`) are its
/// real-time API and run in `crates/cli/tests/jack_transport.rs`.
///
/// [`follow`]: downbeat::device::follow
/// [`timebase_bbt`]: downbeat::device::timebase_bbt
#[test]
fn following_an_outside_transport_is_clean() {
    use downbeat::control::When;
    use downbeat::device::{follow, timebase_bbt, ExternalPosition, TransportRequests};
    use downbeat_graph::time::TransportCommand;
    let p = song();
    let mut engine = Engine::new(p.build().unwrap());
    let requests = TransportRequests::new();
    let frames = 256;
    let mut block = vec![0.0f32; frames];
    let mut jack = ExternalPosition {
        rolling: false,
        frame: 0,
        bpm: None,
    };
    let mut cycle = |engine: &mut Engine, jack: &mut ExternalPosition, round: u32| {
        let taken = requests.take();
        // JACK carries the requests out (here at once; a cycle or two later in JACK).
        if let Some(f) = taken.locate_frame(engine.schedule().transport().map()) {
            jack.frame = f;
        }
        if let Some(rolling) = taken.rolling() {
            jack.rolling = rolling;
        }
        match round {
            // A locate in JACK while stopped, then while rolling; a master's tempo.
            20 => jack.frame = 200_000,
            40 => jack.rolling = true,
            90 => jack.frame = 50_000,
            120 => jack.bpm = Some(150.0),
            160 => jack.bpm = Some(95.5),
            200 => jack.rolling = false,
            _ => {}
        }
        let commands = follow(engine.schedule().transport(), jack);
        let transport = engine.schedule_mut().transport_mut();
        for command in commands.iter() {
            let _ = transport.apply(command);
        }
        engine.process(&mut block);
        let published = timebase_bbt(engine.schedule().transport().map(), jack.frame);
        std::hint::black_box(published);
        if jack.rolling {
            jack.frame += frames as u64;
        }
    };
    for round in 0..10 {
        cycle(&mut engine, &mut jack, round);
    }
    let report = guard::check(|| {
        for round in 10..300u32 {
            let sent = match round {
                230 => requests.send(When::Now, TransportCommand::LocateBeat(9.5)),
                240 => requests.send(When::Now, TransportCommand::Play),
                270 => requests.send(When::Now, TransportCommand::LocateFrame(1_000_000)),
                280 => requests.send(When::Now, TransportCommand::Stop),
                _ => Ok(()),
            };
            sent.unwrap();
            cycle(&mut engine, &mut jack, round);
        }
    });
    support::assert_complete(&report);
    report.assert_clean();
    let t = engine.schedule().transport();
    assert!(!t.is_playing() && !jack.rolling);
    // Located to 1,000,000 at round 270, rolled ten cycles, stopped at round 280.
    assert_eq!(
        (t.song_frame(), jack.frame),
        (1_002_560, 1_002_560),
        "the last locate was followed"
    );
    assert_eq!(t.looping(), None, "the project's loop was dropped");
    assert_eq!(t.position().bpm, 95.5, "the master's tempo was taken");
}

#[test]
fn a_planar_call_with_input_is_clean_and_matches_the_interleaved_one() {
    // `Engine::process_planar`, as the Python package's chains call it: the input and output
    // arrays one channel after the other, any length, cut into blocks by the engine.
    let (pa, pb) = (Capture::new(2, 128), Capture::new(2, 128));
    let (mut planar, mut interleaved) = (through_gain(&pa), through_gain(&pb));
    let longest = 4096 + 77;
    let input = signal(longest, 2, 3);
    let mut out = downbeat_graph::prefaulted(2 * longest);
    planar.process_planar(&input[..2 * 256], &mut out[..2 * 256], 256);
    let sizes = [256, 1024, 77, longest, 512];
    let report = guard::check(|| {
        for n in sizes {
            planar.process_planar(&input[..2 * n], &mut out[..2 * n], n);
        }
    });
    support::assert_complete(&report);
    report.assert_clean();
    // The last call: each output channel is its input channel at half the level, and the
    // same as the interleaved call gives for the same frames.
    let last = *sizes.last().unwrap();
    let mut frames = vec![0.0f32; 2 * last];
    let mut both = vec![0.0f32; 2 * last];
    for (f, frame) in frames.chunks_exact_mut(2).enumerate() {
        frame[0] = input[f];
        frame[1] = input[last + f];
    }
    interleaved.process_with_input(&frames, &mut both);
    for c in 0..2 {
        let got = &out[c * last..(c + 1) * last];
        let want: Vec<f32> = input[c * last..(c + 1) * last]
            .iter()
            .map(|s| s * 0.5)
            .collect();
        assert!(got == &want[..], "channel {c} is not its input halved");
        let theirs: Vec<f32> = both.iter().skip(c).step_by(2).copied().collect();
        assert!(
            got == &theirs[..],
            "channel {c} differs from the interleaved call"
        );
    }
}
