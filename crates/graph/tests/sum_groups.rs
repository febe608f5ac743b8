//! A node with more than `SUM_GROUP` inputs adds them up in groups, each right after its
//! last input: the same bits serially, on the pool, through a caller's own scheduler, and
//! under the guard.

use downbeat_graph::{CompileConfig, Graph, Schedule, SUM_GROUP};
use downbeat_nodes::{Noise, NoiseSettings, Output};
use downbeat_rt::guard::{self, Allow, Options};
use downbeat_rt::pool::{Pool, PoolConfig};

downbeat_rt::install_guard_allocator!();

const CFG: CompileConfig = CompileConfig {
    sample_rate: 48_000,
    max_block: 128,
};

const BLOCKS: [usize; 6] = [128, 17, 100, 1, 64, 33];

/// Levels a thousandfold apart: adding in another order changes the low bits.
fn level(k: usize) -> f32 {
    0.5 / (1.0 + (k % 13) as f32 * 80.0)
}

fn noise(k: usize) -> Noise {
    Noise::new(
        2,
        &NoiseSettings {
            amp: level(k),
            seed: 100 + k as u64,
        },
    )
}

/// `width` noise sources summed by the output.
fn wide(width: usize) -> Schedule {
    let mut g = Graph::new();
    let out = g.add("out", Output::new(2));
    for k in 0..width {
        let n = g.add(format!("n{k}"), noise(k));
        g.connect(n, out);
    }
    g.set_output(out);
    g.compile(CFG).unwrap()
}

fn render(
    s: &mut Schedule,
    blocks: &[usize],
    mut process: impl FnMut(&mut Schedule, usize),
) -> Vec<f32> {
    let mut out = Vec::new();
    for &frames in blocks {
        process(s, frames);
        for c in 0..2 {
            out.extend_from_slice(s.output().channel(c));
        }
    }
    out
}

fn first_difference(a: &[f32], b: &[f32]) -> Option<usize> {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .position(|(x, y)| x.to_bits() != y.to_bits())
}

/// The sum of 150 inputs is three groups of 50, each added up in input order, then the
/// three partial sums in order: written out here from each source rendered alone. A plain
/// sum in a row gives other bits, so the test tells the two apart.
#[test]
fn a_wide_sum_adds_its_groups_in_order() {
    const WIDTH: usize = 150;
    assert_eq!(WIDTH.div_ceil(SUM_GROUP), 3);
    let alone: Vec<Vec<f32>> = (0..WIDTH)
        .map(|k| {
            let mut g = Graph::new();
            let n = g.add("n", noise(k));
            let out = g.add("out", Output::new(2));
            g.connect(n, out);
            g.set_output(out);
            render(&mut g.compile(CFG).unwrap(), &BLOCKS, |s, f| s.process(f))
        })
        .collect();
    let sum = |range: std::ops::Range<usize>| {
        let mut acc = alone[range.start].clone();
        for one in &alone[range.start + 1..range.end] {
            for (a, x) in acc.iter_mut().zip(one) {
                *a += x;
            }
        }
        acc
    };
    let mut want = sum(0..50);
    for part in [sum(50..100), sum(100..150)] {
        for (w, x) in want.iter_mut().zip(&part) {
            *w += x;
        }
    }
    let in_a_row = sum(0..WIDTH);
    assert!(
        first_difference(&want, &in_a_row).is_some(),
        "the levels must make the two orders differ"
    );
    let got = render(&mut wide(WIDTH), &BLOCKS, |s, f| s.process(f));
    assert!(want.iter().any(|&x| x != 0.0));
    assert_eq!(
        first_difference(&want, &got),
        None,
        "the first sample summed in another order"
    );
    // At `SUM_GROUP` inputs and below, a sum is one row, as before groups.
    let got = render(&mut wide(SUM_GROUP), &BLOCKS, |s, f| s.process(f));
    assert_eq!(first_difference(&sum(0..SUM_GROUP), &got), None);
}

fn pool(workers: usize) -> Pool {
    Pool::new(PoolConfig {
        workers: Some(workers),
        realtime_priority: None,
        ..PoolConfig::default()
    })
}

/// The pool's threads add up the groups as tasks of their own and share the sources in
/// measured shares that move every 2048 frames; a caller's scheduler gets them added up
/// before the node. Every one gives the serial bits.
#[test]
fn groups_give_the_serial_bits_on_the_pool_and_through_a_runner() {
    let blocks: Vec<usize> = (0..120).map(|i| BLOCKS[i % BLOCKS.len()]).collect();
    let serial = render(&mut wide(600), &blocks, |s, f| s.process(f));
    for workers in [1, 3] {
        let pool = pool(workers);
        let parallel = render(&mut wide(600), &blocks, |s, f| s.process_parallel(f, &pool));
        assert_eq!(
            first_difference(&serial, &parallel),
            None,
            "{workers} workers: the first sample that differs from serial"
        );
    }
    // A runner that runs the nodes last first wherever the order allows: the sources
    // backwards, then the output.
    let runner = render(&mut wide(600), &blocks, |s, f| {
        s.with_runner(f, |r| {
            let (sources, sinks): (Vec<usize>, Vec<usize>) =
                (0..r.len()).partition(|&i| r.predecessors(i).is_empty());
            for &i in sources.iter().rev().chain(&sinks) {
                // SAFETY: one thread, each node once, after its predecessors.
                unsafe { r.run(i) };
            }
        })
    });
    assert_eq!(first_difference(&serial, &runner), None);
}

/// Adding up the groups, serially and on the pool (the audio thread's share and the tasks
/// it hands on), makes no allocation, free, lock or system call but the pool's counted
/// wake.
#[test]
fn groups_are_real_time_safe() {
    let pool = pool(1);
    let mut s = wide(600);
    for _ in 0..20 {
        s.process_parallel(64, &pool);
    }
    let wakes_before = pool.wakes();
    let report = guard::check_with(&Options::new().allow(Allow::FutexWake), || {
        for _ in 0..200 {
            s.process_parallel(64, &pool);
            s.process(64);
        }
    })
    .1;
    report.assert_clean();
    let futex = report.allowed_syscall_count("futex");
    let wakes = pool.wakes() - wakes_before;
    assert!(futex <= wakes, "{futex} futex calls, {wakes} counted wakes");
    assert!(s.output().channel(0).iter().any(|&x| x != 0.0));
}
