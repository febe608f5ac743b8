//! A long input sum split across the pool's threads by frame ranges gives the serial bits.

use downbeat_graph::{CompileConfig, Graph, Schedule};
use downbeat_nodes::{Mix, MixSettings, Noise, NoiseSettings, Output};
use downbeat_rt::guard::{self, Allow, Options};
use downbeat_rt::pool::{Pool, PoolConfig};

downbeat_rt::install_guard_allocator!();

const CFG: CompileConfig = CompileConfig {
    sample_rate: 48_000,
    max_block: 1024,
};

/// Inputs of the split sum: as many as a sum adds in a row (more are added in groups, see
/// `sum_groups.rs`), over blocks of up to 1024 frames, a sum long enough to be split on
/// any machine.
const WIDTH: usize = downbeat_graph::SUM_GROUP;

/// `width` noise sources of different levels summed by a mix, and the mix with a few of
/// them summed again by the output, whose short sum stays whole: a split sum feeding an
/// unsplit one.
fn wide(width: usize, seed: u64) -> Schedule {
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
    let out = g.add("out", Output::new(2));
    for k in 0..width {
        // Levels a thousandfold apart: adding in any other order changes the low bits.
        let level = 0.5 / (1.0 + (k % 13) as f32 * 80.0);
        let n = g.add(
            format!("n{k}"),
            Noise::new(
                2,
                &NoiseSettings {
                    amp: level,
                    seed: seed + k as u64,
                },
            ),
        );
        g.connect(n, mix);
        if k % 97 == 0 {
            g.connect(n, out);
        }
    }
    g.connect(mix, out);
    g.set_output(out);
    g.compile(CFG).unwrap()
}

fn render(mut s: Schedule, blocks: &[usize]) -> Vec<f32> {
    let mut out = Vec::new();
    for &frames in blocks {
        s.process(frames);
        for c in 0..2 {
            out.extend_from_slice(s.output().channel(c));
        }
    }
    out
}

/// As [`render`], on the pool, with how many sums were split in the last block.
fn render_split(mut s: Schedule, pool: &Pool, blocks: &[usize]) -> (Vec<f32>, usize) {
    let mut out = Vec::new();
    for &frames in blocks {
        s.process_parallel(frames, pool);
        for c in 0..2 {
            out.extend_from_slice(s.output().channel(c));
        }
    }
    (out, s.split_sums())
}

fn pool(workers: usize) -> Pool {
    Pool::new(PoolConfig {
        workers: Some(workers),
        realtime_priority: None,
        ..PoolConfig::default()
    })
}

/// Blocks of many sizes, some shorter than a part's cache line of frames (a part then sums
/// nothing), with the split decided again every 2048 frames, the last time from long
/// blocks.
#[test]
fn split_sums_are_bit_identical_to_serial_at_every_block_size() {
    let blocks: Vec<usize> = (0..120)
        .map(|i| {
            if i % 16 == 0 || i >= 112 {
                1024
            } else {
                [1024, 64, 1, 100, 17, 33][i % 6]
            }
        })
        .collect();
    let serial = render(wide(WIDTH, 5), &blocks);
    assert!(serial.iter().any(|&s| s != 0.0));
    assert!(
        downbeat_rt::pool::available_cores() > 1,
        "splitting needs two cores"
    );
    for workers in [1, 3] {
        let pool = pool(workers);
        let (parallel, split) = render_split(wide(WIDTH, 5), &pool, &blocks);
        // Whether a sum is split depends on its measured time: the mix's always is; on a
        // loaded machine the output's may be too, which changes no bit.
        assert!(split >= 1, "the mix's sum is split");
        let first = serial
            .iter()
            .zip(&parallel)
            .position(|(a, b)| a.to_bits() != b.to_bits());
        assert_eq!(
            first, None,
            "{workers} workers: the first sample that differs from serial"
        );
    }
}

/// The audio thread's side of a block with split sums (making the parts ready, summing its
/// own, running the node after the last) makes no allocation, free, lock or system call but
/// the pool's counted wake.
#[test]
fn split_sums_on_the_pool_are_real_time_safe() {
    let pool = pool(1);
    let mut s = wide(WIDTH, 9);
    // The first block is timed: from the second on, the mix's sum is split.
    for _ in 0..20 {
        s.process_parallel(1024, &pool);
    }
    let wakes_before = pool.wakes();
    let report = guard::check_with(&Options::new().allow(Allow::FutexWake), || {
        for _ in 0..200 {
            s.process_parallel(1024, &pool);
        }
    })
    .1;
    report.assert_clean();
    // At least the mix's; the guard's own cost can push the output's sum over the threshold.
    assert!(
        s.split_sums() >= 1,
        "the guarded blocks split the mix's sum"
    );
    let futex = report.allowed_syscall_count("futex");
    let wakes = pool.wakes() - wakes_before;
    assert!(futex <= wakes, "{futex} futex calls, {wakes} counted wakes");
    assert!(s.output().channel(0).iter().any(|&x| x != 0.0));
}

/// The schedule's sum of a node's inputs, in whole chunks of frames and the ragged end of a
/// block alike, is each frame's inputs added in index order, as written out here from each
/// source rendered alone.
#[test]
fn split_sums_add_each_frame_in_input_order() {
    const WIDTH: u64 = 40;
    let level = |k: u64| 0.5 / (1.0 + (k % 13) as f32 * 80.0);
    let blocks = [128, 17, 100, 1, 64];
    let alone = |k: u64| {
        let mut g = Graph::new();
        let n = g.add(
            "n",
            Noise::new(
                2,
                &NoiseSettings {
                    amp: level(k),
                    seed: 100 + k,
                },
            ),
        );
        let out = g.add("out", Output::new(2));
        g.connect(n, out);
        g.set_output(out);
        render(g.compile(CFG).unwrap(), &blocks)
    };
    let mut want = alone(0);
    for k in 1..WIDTH {
        for (w, x) in want.iter_mut().zip(alone(k)) {
            *w += x;
        }
    }
    let mut g = Graph::new();
    let out = g.add("out", Output::new(2));
    for k in 0..WIDTH {
        let n = g.add(
            format!("n{k}"),
            Noise::new(
                2,
                &NoiseSettings {
                    amp: level(k),
                    seed: 100 + k,
                },
            ),
        );
        g.connect(n, out);
    }
    g.set_output(out);
    let got = render(g.compile(CFG).unwrap(), &blocks);
    assert!(want.iter().any(|&x| x != 0.0));
    let first = want
        .iter()
        .zip(&got)
        .position(|(a, b)| a.to_bits() != b.to_bits());
    assert_eq!(first, None, "the first sample summed in another order");
}
