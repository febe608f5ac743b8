//! The parallel processor gives exactly the serial processor's output.

use downbeat_graph::{
    AudioMut, AudioRef, CompileConfig, Graph, Node, NodeId, ProcessContext, Schedule,
};
use downbeat_nodes::{
    CompressorSettings, Karplus, KarplusSettings, Mix, MixSettings, Noise, NoiseSettings, Output,
    SpectralCompressor,
};
use downbeat_rt::guard::{self, Allow, Options};
use downbeat_rt::pool::{Pool, PoolConfig};
use proptest::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

downbeat_rt::install_guard_allocator!();

const SR: u32 = 44_100;
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
            g.add(
                format!("src{k}"),
                Noise::new(
                    2,
                    &NoiseSettings {
                        amp: 0.1,
                        seed: seed + k as u64,
                    },
                ),
            )
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
            next.push(g.add(
                format!("m{layer}_{k}"),
                Mix::new(
                    2,
                    &MixSettings {
                        gain_db: -3.0,
                        ..MixSettings::default()
                    },
                ),
            ));
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
        let pool = Pool::new(PoolConfig { workers: Some(2), realtime_priority: None, spin: 100, ..PoolConfig::default() });
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
        ids.push(g.add(
            format!("src{k}"),
            Noise::new(
                2,
                &NoiseSettings {
                    amp: 0.1,
                    seed: seed + k as u64,
                },
            ),
        ));
    }
    let mut x = seed | 1;
    let mut rnd = |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    for k in 0..n {
        let id = g.add(
            format!("m{k}"),
            Mix::new(
                2,
                &MixSettings {
                    gain_db: -3.0,
                    ..MixSettings::default()
                },
            ),
        );
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

/// A stress run of the ready queues, stealing and the ranks re-taken every 2048 frames: a
/// node run before one of its inputs (or twice, or never) changes the output.
#[test]
fn a_thousand_blocks_of_a_random_dag_on_three_workers_match_serial() {
    let pool = Pool::new(PoolConfig {
        workers: Some(3),
        realtime_priority: None,
        ..PoolConfig::default()
    });
    let blocks = [64; 1000];
    let serial = render(random_dag(12, 150, 3), None, &blocks);
    let parallel = render(random_dag(12, 150, 3), Some(&pool), &blocks);
    assert!(serial.iter().any(|&s| s != 0.0));
    assert!(serial == parallel, "parallel output differs from serial");
}

/// What the tiny nodes of [`tiny_graph`] record as they run: how many times each ran, and
/// how often one ran before an input of it had run in the same block.
struct Ledger {
    runs: Vec<AtomicUsize>,
    preds: Vec<Vec<usize>>,
    out_of_order: AtomicUsize,
}

/// A node that does next to nothing (tens of nanoseconds for a block), the kind the
/// parallel processor gives out in runs, and checks that its inputs ran before it.
struct Tiny {
    id: usize,
    ledger: Arc<Ledger>,
    phase: f32,
}

impl Node for Tiny {
    fn input_channels(&self) -> usize {
        1
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        let l = &*self.ledger;
        // This node has run `mine` times before this block; each input must have run once
        // more, this block included.
        let mine = l.runs[self.id].load(Ordering::Relaxed);
        for &p in &l.preds[self.id] {
            if l.runs[p].load(Ordering::Relaxed) != mine + 1 {
                l.out_of_order.fetch_add(1, Ordering::Relaxed);
            }
        }
        for (o, &x) in output.channel_mut(0).iter_mut().zip(input.channel(0)) {
            self.phase = (self.phase + 0.013 * (self.id % 7 + 1) as f32).fract();
            *o = x * 0.5 + self.phase * 1e-3;
        }
        l.runs[self.id].store(mine + 1, Ordering::Relaxed);
    }
}

/// About 1500 tiny nodes in the shapes the parallel processor batches and fuses: 600
/// sources into one mix (as `sines`), 60 chains of 8 (as `fanin`), and a random DAG of 400
/// nodes each taking 1-3 earlier ones, all into a last node before the output.
fn tiny_graph() -> (Schedule, Arc<Ledger>) {
    let mut edges: Vec<(usize, usize)> = Vec::new();
    let mut n = 0;
    let mut node = || {
        n += 1;
        n - 1
    };
    let last = node();
    let wide = node();
    for _ in 0..600 {
        let s = node();
        edges.push((s, wide));
    }
    edges.push((wide, last));
    for _ in 0..60 {
        let mut prev = node();
        for _ in 1..8 {
            let next = node();
            edges.push((prev, next));
            prev = next;
        }
        edges.push((prev, last));
    }
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = |m: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % m as u64) as usize
    };
    let mut dag = vec![node()];
    for _ in 1..400 {
        let id = node();
        let mut from: Vec<usize> = (0..1 + rnd(3)).map(|_| dag[rnd(dag.len())]).collect();
        from.sort_unstable();
        from.dedup();
        edges.extend(from.into_iter().map(|f| (f, id)));
        dag.push(id);
    }
    edges.push((*dag.last().unwrap(), last));
    let mut preds = vec![Vec::new(); n];
    for &(a, b) in &edges {
        preds[b].push(a);
    }
    let ledger = Arc::new(Ledger {
        runs: (0..n).map(|_| AtomicUsize::new(0)).collect(),
        preds,
        out_of_order: AtomicUsize::new(0),
    });
    let mut g = Graph::new();
    let ids: Vec<NodeId> = (0..n)
        .map(|id| {
            let ledger = Arc::clone(&ledger);
            g.add(
                format!("t{id}"),
                Tiny {
                    id,
                    ledger,
                    phase: 0.0,
                },
            )
        })
        .collect();
    for (a, b) in edges {
        g.connect(ids[a], ids[b]);
    }
    let out = g.add("out", Output::new(1));
    g.connect(ids[last], out);
    g.set_output(out);
    let cfg = CompileConfig {
        sample_rate: 48_000,
        max_block: 64,
    };
    (g.compile(cfg).unwrap(), ledger)
}

fn render_mono(s: &mut Schedule, pool: Option<&Pool>, blocks: usize) -> Vec<f32> {
    let mut out = Vec::new();
    for _ in 0..blocks {
        match pool {
            Some(p) => s.process_parallel(64, p),
            None => s.process(64),
        }
        out.extend_from_slice(s.output().channel(0));
    }
    out
}

/// Many tiny nodes, given out in runs and fused chains once their times are measured (one
/// block per 2048 frames): the same bits as serial, every node once per block, never before an input.
#[test]
fn tiny_nodes_in_runs_match_serial_and_each_runs_once_per_block_after_its_inputs() {
    let pool = Pool::new(PoolConfig {
        workers: Some(2),
        realtime_priority: None,
        ..PoolConfig::default()
    });
    let blocks = 300;
    let (mut serial, serial_ledger) = tiny_graph();
    let (mut parallel, ledger) = tiny_graph();
    let a = render_mono(&mut serial, None, blocks);
    let b = render_mono(&mut parallel, Some(&pool), blocks);
    assert_eq!(serial_ledger.out_of_order.load(Ordering::Relaxed), 0);
    assert!(a.iter().any(|&s| s != 0.0));
    for (id, runs) in ledger.runs.iter().enumerate() {
        assert_eq!(
            runs.load(Ordering::Relaxed),
            blocks,
            "node t{id} ran a different number of times than there were blocks"
        );
    }
    assert_eq!(
        ledger.out_of_order.load(Ordering::Relaxed),
        0,
        "a node ran before one of its inputs"
    );
    let first = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x.to_bits() != y.to_bits());
    assert_eq!(
        first, None,
        "parallel output differs from serial (first sample)"
    );
}

/// The audio thread's side of a block given out in runs (claiming, running, releasing,
/// closing) makes no allocation, free, lock or system call but the pool's counted wake.
#[test]
fn tiny_nodes_in_runs_on_the_pool_are_real_time_safe() {
    let pool = Pool::new(PoolConfig {
        workers: Some(1),
        realtime_priority: None,
        ..PoolConfig::default()
    });
    let (mut s, ledger) = tiny_graph();
    // Time the nodes first (block 0 and one per 2048 frames), so that the guarded blocks run
    // in runs.
    render_mono(&mut s, Some(&pool), 40);
    let wakes_before = pool.wakes();
    let blocks = 200;
    let report = guard::check_with(&Options::new().allow(Allow::FutexWake), || {
        for _ in 0..blocks {
            s.process_parallel(64, &pool);
        }
    })
    .1;
    report.assert_clean();
    let wakes = pool.wakes() - wakes_before;
    let futex = report.allowed_syscall_count("futex");
    assert!(futex <= wakes, "{futex} futex calls, {wakes} counted wakes");
    assert_eq!(ledger.out_of_order.load(Ordering::Relaxed), 0);
    assert!(ledger
        .runs
        .iter()
        .all(|r| r.load(Ordering::Relaxed) == 40 + blocks));
}
