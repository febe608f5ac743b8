//! The audio-thread paths of the graph and engine, run under the guard: no allocation, free,
//! lock, page fault or system call (except the pool's counted wake of parked workers).

use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::nodes::{Mix, Output, Sine};
use downbeat_graph::{CompileConfig, Graph, Schedule};
use downbeat_rt::guard::{self, Allow, Options, Report};

downbeat_rt::install_guard_allocator!();

fn project(name: &str) -> Project {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/projects/");
    Project::load(format!("{path}{name}")).unwrap()
}

/// The guard must have seen syscalls where it can: otherwise a clean report proves little.
fn assert_complete(r: &Report) {
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        assert!(
            r.is_complete(),
            "guard could not track everything here:\n{r}"
        );
    }
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
    assert_complete(&report);
    report.assert_clean();
}

#[test]
fn engine_process_is_clean_for_every_example() {
    for name in ["fanin84.toml", "hello.toml"] {
        let mut engine = Engine::new(project(name).build().unwrap());
        let mut block = vec![0.0f32; engine.block_size() * engine.channels()];
        for _ in 0..200 {
            engine.process(&mut block);
        }
        let report = guard::check(|| {
            for _ in 0..200 {
                engine.process(&mut block);
            }
        });
        assert_complete(&report);
        report.assert_clean();
        assert_eq!(engine.summary().blocks, 400);
    }
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
    assert_complete(&report);
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
    let mix = g.add("mix", Mix::new(2, -6.0, 0.0));
    for k in 0..1 + next() % 6 {
        let freq = 100.0 + (next() % 2000) as f64;
        let s = g.add(
            format!("s{k}"),
            Sine::new(2, cfg.sample_rate, freq, 0.1, 0.0),
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
        sample_rate: 48_000.0,
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
    assert_complete(&report);
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
    use downbeat::device::{Recording, Renderer};
    // The body of the JACK process callback: render, record, hand out interleaved frames.
    let mut engine = Engine::new(project("hello.toml").build().unwrap());
    let recording = Recording::new(48_000, engine.channels());
    let mut r = Renderer::new(engine.channels(), 48_000, Some(recording.clone()));
    for _ in 0..20 {
        r.render(&mut engine, 256);
    }
    let report = guard::check(|| {
        for n in [256, 1024, 77, 256, 4096] {
            let block = r.render(&mut engine, n);
            assert_eq!(block.len(), n * 2);
        }
    });
    assert_complete(&report);
    report.assert_clean();
    assert_eq!(recording.frames(), 20 * 256 + 256 + 1024 + 77 + 256 + 4096);
}

#[test]
fn planar_driver_callback_with_port_writes_is_clean() {
    use downbeat::device::{Recording, Renderer, MAX_CALLBACK_FRAMES};
    // The whole JACK process callback: render in pieces, record, write every port buffer.
    // Noise, because its channels differ, so a port given the wrong channel shows.
    let noise =
        "edges = [\"n -> out\"]\n[nodes.n]\ntype = \"noise\"\n[nodes.out]\ntype = \"output\"\n";
    let mut engine = Engine::new(
        Project::parse(noise, "noise.toml")
            .unwrap()
            .build()
            .unwrap(),
    );
    let ch = engine.channels();
    let total = 64 * 1024;
    let recording = Recording::new(total, ch);
    let mut r = Renderer::new(ch, total as u64, Some(recording.clone()));
    // Port buffers as a driver would hand them: one per channel, longer than one piece.
    let mut ports: Vec<Vec<f32>> = (0..ch)
        .map(|_| downbeat_graph::prefaulted(MAX_CALLBACK_FRAMES + 4096))
        .collect();
    r.render_planar(&mut engine, 256, ports.as_mut_slice());
    let sizes = [256, 1024, 77, MAX_CALLBACK_FRAMES + 4096, 512];
    let report = guard::check(|| {
        for n in sizes {
            r.render_planar(&mut engine, n, ports.as_mut_slice());
        }
    });
    assert_complete(&report);
    report.assert_clean();
    // The ports hold the last callback, which is the end of the recording, channel by channel.
    let rec = recording.to_vec();
    let last = *sizes.last().unwrap();
    let tail = &rec[rec.len() - last * ch..];
    for (c, port) in ports.iter().enumerate() {
        let from_recording: Vec<f32> = tail.iter().skip(c).step_by(ch).copied().collect();
        assert!(
            port[..last] == from_recording[..],
            "port {c} does not hold channel {c} of the recording"
        );
    }
    assert!(
        tail.iter().any(|&s| s != 0.0),
        "the callback produced sound"
    );
}

#[test]
fn meter_tap_in_the_callback_is_clean() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    let delivered = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&delivered);
    let (mut tap, thread) = downbeat::meters::spawn(2, 1, move |m| {
        seen.store(m.frames, Ordering::Relaxed);
    });
    let mut engine = Engine::new(project("hello.toml").build().unwrap());
    let mut buf = vec![0.0f32; engine.block_size() * engine.channels()];
    engine.process(&mut buf);
    tap.block(&buf, engine.load().last()); // warm-up outside the guard
    let report = guard::check(|| {
        for _ in 0..500 {
            engine.process(&mut buf);
            tap.block(&buf, engine.load().last());
        }
    });
    assert_complete(&report);
    report.assert_clean();
    drop(tap);
    thread.stop();
    let frames = 501 * engine.block_size() as u64;
    assert_eq!(
        delivered.load(Ordering::Relaxed),
        frames,
        "the last meters reach the thread"
    );
}
