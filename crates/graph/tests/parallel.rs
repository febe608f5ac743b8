//! The parallel processor gives exactly the serial processor's output.

use downbeat_graph::nodes::{
    CompressorSettings, Karplus, KarplusSettings, Mix, Noise, Output, SpectralCompressor,
};
use downbeat_graph::{CompileConfig, Graph, Schedule};
use downbeat_rt::pool::{Pool, PoolConfig};
use proptest::prelude::*;

const SR: f32 = 44_100.0;
const CFG: CompileConfig = CompileConfig {
    sample_rate: SR,
    max_block: 128,
};

/// A fan-in graph of noise and plucked strings through compressors and mixes, built from
/// `shape`: each layer's width, the last being 1.
fn fan_in(shape: &[usize], seed: u64) -> Schedule {
    let mut g = Graph::new();
    let mut prev = Vec::new();
    for k in 0..shape[0] {
        let id = if k % 2 == 0 {
            let s = KarplusSettings {
                offset: (k as f64) * 0.003,
                interval: 0.05,
                length: 0.02,
                seed: seed + k as u64,
                ..KarplusSettings::default()
            };
            g.add(format!("src{k}"), Karplus::new(2, SR, &s).unwrap())
        } else {
            g.add(format!("src{k}"), Noise::new(2, 0.1, seed + k as u64))
        };
        let comp = CompressorSettings {
            fft_size: 256,
            ..CompressorSettings::default()
        };
        let c = g.add(
            format!("c0_{k}"),
            SpectralCompressor::new(2, SR, &comp).unwrap(),
        );
        g.connect(id, c);
        prev.push(c);
    }
    for (layer, &width) in shape.iter().enumerate().skip(1) {
        let mut next = Vec::new();
        for k in 0..width {
            next.push(g.add(format!("m{layer}_{k}"), Mix::new(2, -3.0, 0.0)));
        }
        for (j, &p) in prev.iter().enumerate() {
            g.connect(p, next[j * width / prev.len()]);
        }
        prev = next;
    }
    let out = g.add("out", Output::new(2));
    g.connect(prev[0], out);
    g.set_output(out);
    g.compile(CFG).unwrap()
}

fn render(mut s: Schedule, pool: Option<&Pool>, blocks: &[usize]) -> Vec<f32> {
    let mut out = Vec::new();
    for &frames in blocks {
        match pool {
            Some(p) => s.process_parallel(frames, p),
            None => s.process(frames),
        }
        for c in 0..2 {
            out.extend_from_slice(s.output().channel(c));
        }
    }
    out
}

#[test]
fn parallel_output_is_bit_identical_to_serial() {
    let pool = Pool::new(PoolConfig {
        workers: Some(3),
        realtime_priority: None,
        pin: false,
        ..PoolConfig::default()
    });
    let blocks: Vec<usize> = (0..200).map(|i| [128, 64, 1, 100][i % 4]).collect();
    let shape = [24, 6, 3, 2, 1];
    let serial = render(fan_in(&shape, 7), None, &blocks);
    let parallel = render(fan_in(&shape, 7), Some(&pool), &blocks);
    assert!(serial.iter().any(|&s| s != 0.0));
    assert!(serial == parallel, "parallel output differs from serial");
}

#[test]
fn a_pool_without_workers_runs_everything_on_the_caller() {
    let pool = Pool::new(PoolConfig {
        workers: Some(0),
        ..PoolConfig::default()
    });
    let blocks = [128; 20];
    let a = render(fan_in(&[4, 2, 1], 1), None, &blocks);
    let b = render(fan_in(&[4, 2, 1], 1), Some(&pool), &blocks);
    assert!(a == b);
    assert_eq!(pool.wakes(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn random_fan_ins_match_serial(widths in proptest::collection::vec(1usize..9, 1..4), seed in 0u64..1000) {
        let mut shape = widths.clone();
        shape.sort_unstable_by(|a, b| b.cmp(a));
        shape.push(1);
        let pool = Pool::new(PoolConfig { workers: Some(2), realtime_priority: None, pin: false, spin: 100, ..PoolConfig::default() });
        let blocks = [128, 7, 128, 128, 33];
        let serial = render(fan_in(&shape, seed), None, &blocks);
        let parallel = render(fan_in(&shape, seed), Some(&pool), &blocks);
        prop_assert!(serial == parallel);
    }
}

/// A random DAG: `n` nodes after `sources` noise sources, each mixing 1-3 earlier nodes.
fn random_dag(sources: usize, n: usize, seed: u64) -> Schedule {
    let mut g = Graph::new();
    let mut ids = Vec::new();
    for k in 0..sources {
        ids.push(g.add(format!("src{k}"), Noise::new(2, 0.1, seed + k as u64)));
    }
    let mut x = seed | 1;
    let mut rnd = |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    for k in 0..n {
        let id = g.add(format!("m{k}"), Mix::new(2, -3.0, 0.0));
        let mut from: Vec<usize> = (0..1 + rnd(3)).map(|_| rnd(ids.len())).collect();
        from.sort_unstable();
        from.dedup();
        for f in from {
            g.connect(ids[f], id);
        }
        ids.push(id);
    }
    let out = g.add("out", Output::new(2));
    let last = *ids.last().unwrap();
    g.connect(last, out);
    g.set_output(out);
    g.compile(CFG).unwrap()
}

/// A stress run of the ready queues, stealing and the ranks re-taken every 16 blocks: a
/// node run before one of its inputs (or twice, or never) changes the output.
#[test]
fn a_thousand_blocks_of_a_random_dag_on_three_workers_match_serial() {
    let pool = Pool::new(PoolConfig {
        workers: Some(3),
        realtime_priority: None,
        pin: false,
        ..PoolConfig::default()
    });
    let blocks = [64; 1000];
    let serial = render(random_dag(12, 150, 3), None, &blocks);
    let parallel = render(random_dag(12, 150, 3), Some(&pool), &blocks);
    assert!(serial.iter().any(|&s| s != 0.0));
    assert!(serial == parallel, "parallel output differs from serial");
}
