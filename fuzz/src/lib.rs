//! What the fuzz targets share: the node types `downbeat` registers, the files the `player`
//! and `sampler` nodes of a fuzzed project may name, and a fixed project with instruments
//! and live parameters for the targets that fuzz control input.

use std::sync::Once;

use downbeat::project::Project;
use downbeat_graph::ParamValue;

/// Files handed to `downbeat_file::memory` by [`register_node_types`]: a project may name
/// them (`path = "mono.wav"`, `samples = { 60 = "stereo.wav" }`).
pub const MEMORY_FILES: [&str; 2] = ["mono.wav", "stereo.wav"];

/// Registers the node type the `downbeat` binary registers besides the built-in ones and
/// its plugin hosts (`echoes`), and the [`MEMORY_FILES`]. Once per process.
pub fn register_node_types() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        no_realtime();
        downbeat::register_node_type(downbeat_gc_nodes::ECHOES)
            .expect("the collected-heap node type registers");
        downbeat_file::memory::add_file(MEMORY_FILES[0], wav(MEMORY_RATES[0], 1, 400));
        downbeat_file::memory::add_file(MEMORY_FILES[1], wav(MEMORY_RATES[1], 2, 2_000));
    });
}

/// Takes from this process the right to real-time scheduling, so that the threads the nodes
/// start (the `echoes` node's snapshot collector asks for SCHED_FIFO 70, pinned to a core)
/// run at normal priority, as they do without privileges. Fuzzing measures the code, not the
/// machine: at SCHED_FIFO, such a thread starved behind another program's real-time audio
/// thread on its core, and held a finished fuzz run from exiting for minutes. Best effort: a
/// system that refuses the calls leaves things as they were.
fn no_realtime() {
    /// `capset`'s header and data, version 3 (two 32-bit words of each set).
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const CAP_SYS_NICE: u32 = 23;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    let none = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on this process with structures of the layout the kernel
    // reads and writes for capability version 3; `data` has the two elements it expects.
    unsafe {
        libc::setrlimit(libc::RLIMIT_RTPRIO, &none);
        if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) == 0 {
            data[0].effective &= !(1 << CAP_SYS_NICE);
            data[0].permitted &= !(1 << CAP_SYS_NICE);
            libc::syscall(libc::SYS_capset, &header, data.as_ptr());
        }
    }
}

/// Whether every file `project` names is one of the [`MEMORY_FILES`] or a bare name (which
/// finds nothing, or a file of `fuzz/` that is not audio). Any other path could name a
/// device or a pipe of this machine, where a read blocks: a fuzzer that mutates `/dev/null`
/// into `/dev/tty` finds the machine, not the code.
pub fn only_files_in_memory(project: &Project) -> bool {
    let safe = |s: &str| !s.contains('/') || MEMORY_FILES.contains(&s);
    project.nodes.iter().all(|n| {
        n.params.iter().all(|(_, v)| match v {
            ParamValue::Text(s) => safe(s),
            ParamValue::Map(m) => m.iter().all(|(_, s)| safe(s)),
            _ => true,
        })
    })
}

/// The rates of the [`MEMORY_FILES`].
const MEMORY_RATES: [u32; 2] = [8_000, 44_100];

/// Whether `project` plays no file, or plays them at a rate the resampler reaches with at
/// most 1024 exact phases from both [`MEMORY_FILES`]' rates. A rate sharing little with a
/// file's (26685 Hz from 8000 Hz: 5337 phases) makes the resampler tabulate up to 8192:
/// 0.1 s natively, 2 s under the sanitizer, which libFuzzer takes for a hang. Those
/// projects are left out of the build target; the resampler has tests of its own.
pub fn cheap_to_resample(project: &Project) -> bool {
    let gcd = |mut a: u32, mut b: u32| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let plays_files = project
        .nodes
        .iter()
        .any(|n| n.kind == "player" || n.kind == "sampler");
    !plays_files
        || MEMORY_RATES
            .iter()
            .all(|&r| project.sample_rate / gcd(r, project.sample_rate) <= 1024)
}

/// A 16-bit PCM WAV of `frames` frames of a quiet ramp.
fn wav(rate: u32, channels: u16, frames: u32) -> Vec<u8> {
    let data = frames * u32::from(channels) * 2;
    let mut b = Vec::with_capacity(44 + data as usize);
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + data).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&channels.to_le_bytes());
    b.extend_from_slice(&rate.to_le_bytes());
    b.extend_from_slice(&(rate * u32::from(channels) * 2).to_le_bytes());
    b.extend_from_slice(&(channels * 2).to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&data.to_le_bytes());
    for i in 0..frames * u32::from(channels) {
        b.extend_from_slice(&(((i % 200) as i16 - 100) * 50).to_le_bytes());
    }
    b
}

/// A project with two instruments and live parameters of most kinds of node, with
/// `[midi.cc]` mappings: what the control targets (OSC, MIDI files, the wasm ABI) play into.
/// No spectral compressor: its FFTs under the sanitizer would take most of each input's
/// time, on code the control input does not reach.
pub const INSTRUMENTS_PROJECT: &str = r#"
sample_rate = 48000
block_size = 256
edges = [
    "keys -> lp -> mix",
    "pluck -> mix",
    "osc -> g -> mix",
    "hiss -> mix",
    "mix -> out",
]

[nodes.keys]
type = "synth"
voices = 8

[nodes.lp]
type = "biquad"
mode = "lowpass"
freq = 4000.0

[nodes.pluck]
type = "karplus"
length = 0.6
interval = 1.0

[nodes.osc]
type = "sine"
freq = 220.0

[nodes.g]
type = "gain"

[nodes.hiss]
type = "noise"
amp = 0.1

[nodes.mix]
type = "mix"

[nodes.out]
type = "output"

[midi.cc]
74 = "keys.cutoff"
1 = "g.gain"
10 = "mix.pan"
"#;

/// [`INSTRUMENTS_PROJECT`], parsed. Building it once before fuzzing (each target's `init`)
/// also fills the synth's wavetables, made once per process: over a second under the
/// sanitizer, which libFuzzer would take for a hang of the first input.
pub fn instruments_project() -> Project {
    Project::parse(INSTRUMENTS_PROJECT, "instruments.toml").expect("the fixed project parses")
}
