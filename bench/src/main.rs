//! Side-by-side benchmarks of Downbeat against rival libraries.
//!
//! `downbeat-bench SUITE [--json] [--quick] [--runs N]`; each suite lives in its own module and
//! reports through [`report::Report`], so adding one means adding a module and a variant below.

use clap::{Parser, Subcommand};

mod alloc;
mod clock;
mod control;
mod edit;
mod engines;
mod files;
mod fuzz;
mod gc;
mod graph;
mod notify;
mod report;
mod ring;
mod rng;
mod soak;
mod synth;
mod transport;

#[derive(Parser)]
#[command(
    name = "downbeat-bench",
    about = "Benchmarks Downbeat against other libraries"
)]
struct Cli {
    #[command(subcommand)]
    suite: Suite,
}

#[derive(Subcommand)]
enum Suite {
    /// SPSC ring buffer: Downbeat vs rtrb, ringbuf and crossbeam ArrayQueue, each library in its own binary, beside the machine's floor.
    Ring(Common),
    /// Periodic tick lateness ("soft realtime ticker on Linux"): Ticker vs sleep loop, spin_sleep, busy wait, Go, cyclictest.
    Clock(Common),
    /// Async updates from the audio thread (D. Rowland, "Real-time Trade-offs"): notify strategies vs the talk's baselines.
    Notify(Common),
    /// Real-time allocator: Downbeat's TLSF pool vs glibc malloc and rlsf, latency percentiles.
    Alloc(Common),
    /// Parallel graph processing ("Real-Time Safe Multi-Threaded DAW Audio"): serial, rayon spawn and broadcast (also with threads at Downbeat's priority and pinning), Downbeat's pool (also without real-time priority or warm workers), each beside the ideal time on N cores; cases fanin84, uneven, overhead, idle (and plugin with --features lv2).
    Graph(Common),
    /// Snapshot garbage collector vs stop-the-world mark-and-sweep on the thesis' synth song (K. S. Matheussen, "Realtime Audio with Garbage Collection"), 5 runs of 60 s each.
    Gc(gc::GcArgs),
    /// Live control (issue 14): events per block the engine absorbs before its load rises 10% on fanin84.toml, and the latency from an OSC packet to the frame it affects on the virtual device.
    Control(Common),
    /// Synth (issue 15): saw voices one core renders at 48 kHz / 256 frames before the load reaches 0.5, and the cost of a block with 128 note ons.
    Synth(Common),
    /// Audio files (issue 27): decode CPU time per format against sox and ffmpeg (whole processes), resampler speed against rubato's SincFixedIn and sox rate -v.
    Files(Common),
    /// Engines (issue 28): Downbeat against scsynth, supernova and node-web-audio-api on the same workloads (sines, voices, chain, fanin), CPU time per second of audio, each output checked to carry the same signal; and the most voices each plays on a JACK dummy server without an xrun.
    Engines(engines::EnginesArgs),
    /// Fuzzing (issue 42): the cargo-fuzz targets of fuzz/ (project files, MIDI files, OSC, audio files, --input WAV, wasm control records) for a time or a number of inputs each: executions, coverage, features, findings; exits 1 on a finding.
    Fuzz(fuzz::FuzzArgs),
    /// Soak (issue 42): the virtual device at 64-frame blocks for --minutes (default 1) with fanin84, a synth playing a MIDI file on loop, a looping player, 1,000 OSC messages/s from another process, a live edit every second and a recording: xruns, late blocks, events lost, memory, threads, descriptors and the recording, each against its bound; exits 1 when one is out of bounds.
    Soak(soak::SoakArgs),
    /// Live edits (issue 37): edit to audible on the virtual device (10 and 1000 nodes, p50/p99), the audio-thread cost of applying an edit to 1000 nodes against the 5% budget target, and compile time and audio-thread cost against Firewheel; exits 1 when an output is not what it should be.
    Edit(edit::EditArgs),
    /// Musical time (issue 39): the transport's own work per 64-frame block (position, cuts, advance) against the block's budget, and a whole engine block of 100 gains and a metronome with a ramp every four beats, a loop and beat events against the same graph at a steady tempo.
    Transport(Common),
}

/// Options every suite understands.
#[derive(clap::Args, Clone, Debug)]
pub struct Common {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Smoke mode: tiny workloads and one run, to check the harness works (numbers meaningless).
    #[arg(long)]
    pub quick: bool,
    /// Repetitions per case (default 7, ring 15, gc 5; 1 with --quick).
    #[arg(long)]
    pub runs: Option<usize>,
    /// Run only this case (repeatable); all cases when absent.
    #[arg(long = "case", value_name = "CASE")]
    pub cases: Vec<String>,
}

impl Common {
    /// Repetitions of each case: `--runs`, else 1 for `--quick` and 7 otherwise.
    pub fn runs(&self) -> usize {
        self.runs.unwrap_or(if self.quick { 1 } else { 7 }).max(1)
    }

    /// Whether the user asked for `case` (or for everything).
    pub fn wants(&self, case: &str) -> bool {
        self.cases.is_empty() || self.cases.iter().any(|c| c == case)
    }
}

fn main() {
    let cli = Cli::parse();
    // The soak judges its figures: it prints its own table and exits 1 when one fails.
    if let Suite::Soak(args) = &cli.suite {
        std::process::exit(soak::main(args));
    }
    // The edit suite checks every output it measures: it prints its report and exits 1 when
    // one is wrong.
    if let Suite::Edit(args) = &cli.suite {
        std::process::exit(edit::main(args));
    }
    let report = match &cli.suite {
        Suite::Ring(common) => ring::run(common),
        Suite::Clock(common) => clock::run(common),
        Suite::Notify(common) => notify::run(common),
        Suite::Alloc(common) => alloc::run(common),
        Suite::Gc(args) => gc::run(args),
        Suite::Graph(common) => graph::run(common),
        Suite::Control(common) => control::run(common),
        Suite::Synth(common) => synth::run(common),
        Suite::Files(common) => files::run(common),
        Suite::Engines(args) => engines::run(args),
        Suite::Fuzz(args) => fuzz::run(args),
        Suite::Transport(common) => transport::run(common),
        Suite::Soak(_) => unreachable!("the soak ran above"),
        Suite::Edit(_) => unreachable!("the edit suite ran above"),
    };
    let json = match &cli.suite {
        Suite::Ring(common) | Suite::Clock(common) | Suite::Notify(common) => common.json,
        Suite::Alloc(common) | Suite::Graph(common) | Suite::Control(common) => common.json,
        Suite::Synth(common) | Suite::Files(common) | Suite::Transport(common) => common.json,
        Suite::Gc(args) => args.common.json,
        Suite::Engines(args) => args.common.json,
        Suite::Fuzz(args) => args.json,
        Suite::Soak(_) => unreachable!("the soak ran above"),
        Suite::Edit(_) => unreachable!("the edit suite ran above"),
    };
    report.print(json);
}
