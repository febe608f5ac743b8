//! Latency compensation: paths of different latency into one node arrive aligned, serially
//! and on a pool, and the schedule reports the total.

use downbeat_graph::{AudioMut, AudioRef, CompileConfig, Graph, Node, ProcessContext, Schedule};
use downbeat_nodes::{Mix, MixSettings, Output};
use downbeat_rt::pool::{Pool, PoolConfig};

/// One sample of 1.0 at frame 0 of the timeline, silence after.
struct Impulse;

impl Node for Impulse {
    fn input_channels(&self) -> usize {
        0
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        for (k, o) in output.channel_mut(0).iter_mut().enumerate() {
            *o = if ctx.position + k as u64 == 0 {
                1.0
            } else {
                0.0
            };
        }
    }
}

/// Delays by `n` frames and says so, as a plugin with look-ahead does.
struct Lagging {
    line: Vec<f32>,
    pos: usize,
    report: usize,
}

impl Lagging {
    fn new(n: usize) -> Self {
        Self {
            line: vec![0.0; n],
            pos: 0,
            report: n,
        }
    }
}

impl Node for Lagging {
    fn input_channels(&self) -> usize {
        1
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, _ctx: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        for (o, &i) in output.channel_mut(0).iter_mut().zip(input.channel(0)) {
            *o = self.line[self.pos];
            self.line[self.pos] = i;
            self.pos = (self.pos + 1) % self.line.len();
        }
    }
    fn latency(&self) -> usize {
        self.report
    }
}

/// impulse -> (direct, lag 100, lag 37 -> lag 250) -> mix -> out.
fn graph() -> Graph {
    let mut g = Graph::new();
    let imp = g.add("imp", Impulse);
    let a = g.add("a", Lagging::new(100));
    let b = g.add("b", Lagging::new(37));
    let c = g.add("c", Lagging::new(250));
    let mix = g.add(
        "mix",
        Mix::new(
            1,
            &MixSettings {
                gain_db: 0.0,
                ..MixSettings::default()
            },
        ),
    );
    let out = g.add("out", Output::new(1));
    g.connect(imp, mix);
    g.connect(imp, a);
    g.connect(a, mix);
    g.connect(imp, b);
    g.connect(b, c);
    g.connect(c, mix);
    g.connect(mix, out);
    g.set_output(out);
    g
}

fn render(mut schedule: Schedule, pool: Option<&Pool>) -> Vec<f32> {
    let mut out = Vec::new();
    for frames in [64, 1, 100, 64, 128, 77, 64].iter().cycle().take(20) {
        match pool {
            Some(p) => schedule.process_parallel(*frames, p),
            None => schedule.process(*frames),
        }
        out.extend_from_slice(schedule.output().channel(0));
    }
    out
}

const CFG: CompileConfig = CompileConfig {
    sample_rate: 48000,
    max_block: 128,
};

#[test]
fn paths_of_different_latency_into_one_mix_arrive_aligned() {
    let schedule = graph().compile(CFG).unwrap();
    assert_eq!(schedule.latency(), 287, "the longest path: 37 + 250");
    // Delays were inserted on the two short paths, and named after their edge.
    let names = schedule.names().join(", ");
    assert!(names.contains("imp -> mix (latency 287)"), "{names}");
    assert!(names.contains("a -> mix (latency 187)"), "{names}");

    let pool = Pool::new(PoolConfig {
        workers: Some(2),
        realtime_priority: None,
        ..PoolConfig::default()
    });
    let serial = render(graph().compile(CFG).unwrap(), None);
    let parallel = render(graph().compile(CFG).unwrap(), Some(&pool));
    assert!(serial == parallel, "parallel output differs from serial");
    let hits: Vec<(usize, f32)> = serial
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, s)| s != 0.0)
        .collect();
    assert_eq!(hits.len(), 1, "one impulse out, got {hits:?}");
    assert_eq!(hits[0].0, 287, "at the graph's latency");
    // Three unit impulses summed at unity gain (a mono mix does not pan).
    assert!((hits[0].1 - 3.0).abs() < 1e-6, "{hits:?}");
}

#[test]
fn a_graph_without_latency_gets_no_delays() {
    let mut g = Graph::new();
    let imp = g.add("imp", Impulse);
    let mix = g.add(
        "mix",
        Mix::new(
            1,
            &MixSettings {
                gain_db: 0.0,
                ..MixSettings::default()
            },
        ),
    );
    let out = g.add("out", Output::new(1));
    g.connect(imp, mix);
    g.connect(mix, out);
    g.set_output(out);
    let schedule = g.compile(CFG).unwrap();
    assert_eq!(schedule.len(), 3);
    assert_eq!(schedule.latency(), 0);
    let out = render(schedule, None);
    assert_eq!(out[0], 1.0);
}

downbeat_rt::install_guard_allocator!();

#[test]
fn inserted_delays_are_real_time_safe() {
    let mut schedule = graph().compile(CFG).unwrap();
    schedule.process(128);
    let report = downbeat_rt::guard::check(|| {
        for frames in [128, 1, 77, 128] {
            schedule.process(frames);
        }
    });
    report.assert_clean();
}

#[test]
fn a_spectral_compressor_beside_a_dry_path_is_aligned() {
    use downbeat_nodes::{CompressorSettings, SpectralCompressor};
    // Ratio 1 and no makeup: the compressor passes its input through, fft_size late.
    let settings = CompressorSettings {
        fft_size: 256,
        ratio: 1.0,
        makeup_db: 0.0,
        ..CompressorSettings::default()
    };
    let mut g = Graph::new();
    let imp = g.add("imp", Impulse);
    let comp = g.add(
        "comp",
        SpectralCompressor::new(1, CFG.sample_rate, &settings).unwrap(),
    );
    let mix = g.add(
        "mix",
        Mix::new(
            1,
            &MixSettings {
                gain_db: 0.0,
                ..MixSettings::default()
            },
        ),
    );
    let out = g.add("out", Output::new(1));
    g.connect(imp, comp);
    g.connect(comp, mix);
    g.connect(imp, mix);
    g.connect(mix, out);
    g.set_output(out);
    let schedule = g.compile(CFG).unwrap();
    assert_eq!(schedule.latency(), 256);
    let out = render(schedule, None);
    let peak = out
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
        .unwrap();
    assert_eq!(peak.0, 256, "both paths peak together");
    assert!((peak.1 - 2.0).abs() < 1e-3, "{peak:?}");
}
