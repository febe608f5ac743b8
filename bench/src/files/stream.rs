//! Streaming from disk (issue 27): how many `player` streams the engine runs on the virtual
//! device at 256 frames before the first underrun, seek latency (seek to first audible
//! frame, away from any cue), and underruns while another process writes and syncs a large
//! file in a loop; each against `creek`'s `ReadDiskStream` with the same read-ahead, the
//! same files and the same audio-thread pacing and priority.
//!
//! * **Ours**: `Player` nodes (one reader thread for all of them, normal priority) summed
//!   into an `output` node, run by the engine on the `Virtual` device (its callback thread:
//!   `SCHED_FIFO` where allowed, paced by a `Ticker`).
//! * **creek**: one `ReadDiskStream` per file (creek starts one server thread per stream,
//!   normal priority), read on a thread paced by the same `Ticker` with the same options:
//!   each period, every stream that is ready gives 256 frames, summed into a buffer; a
//!   stream that is not ready is an underrun of 256 frames.
//!
//! Read-ahead: 0.5 s at 48 kHz for both (ours: 8 chunks of 3000 frames, the `player`'s
//! default; creek: 8 look-ahead blocks of 3000 frames, no cache blocks). Memory per stream
//! is the read-ahead each holds: our ring of chunks (`Player::ring_bytes`); creek's prefetch
//! blocks and its read buffer. (Resident memory measured around opening the streams was
//! tried: the allocator reuses the previous trial's memory, so it said nothing.)

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use creek::{ReadDiskStream, ReadStreamOptions, SeekMode, SymphoniaDecoder};
use downbeat::device::{Device, RunLength, Virtual};
use downbeat::nodes::Output;
use downbeat::Engine;
use downbeat_file::stream::{Reader, DEFAULT_POLL};
use downbeat_file::{Player, PlayerSettings};
use downbeat_graph::{AudioMut, AudioRef, CompileConfig, Graph, Node, NodeConfig, ProcessContext};
use downbeat_rt::clock::{Ticker, TickerOptions};

use crate::report::{alternating, quantile, Better, Report};
use crate::Common;

const RATE: u32 = 48_000;
const BLOCK: usize = 256;
/// Seconds of read-ahead, for both.
const READ_AHEAD: f64 = 0.5;
/// Frames per chunk (ours) and per block (creek): the player's own choice for `READ_AHEAD`.
const CHUNK: usize = 3000;
/// Chunks (ours) and look-ahead blocks (creek).
const CHUNKS: usize = 8;
/// The `player`'s `seek` parameter.
const P_SEEK: usize = 11;
const IMPLS: [&str; 2] = ["downbeat", "creek"];

/// Seconds of each test file (48 kHz stereo 16-bit WAV).
fn file_seconds(quick: bool) -> u32 {
    if quick {
        4
    } else {
        30
    }
}

/// The files: `s0.wav`, `s1.wav`, … each its own copy of one sox-made file, made on demand.
struct Files {
    dir: PathBuf,
    made: usize,
}

impl Files {
    /// Files of `seconds` seconds.
    fn new(seconds: u32) -> Self {
        let dir =
            std::env::temp_dir().join(format!("downbeat-bench-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary folder");
        let src = dir.join("s0.wav");
        let status = Command::new("sox")
            .args(["-D", "-n", "-r", "48000", "-c", "2", "-b", "16"])
            .arg(&src)
            .args([
                "synth",
                &seconds.to_string(),
                "sine",
                "50-18000",
                "pinknoise",
                "vol",
                "0.4",
            ])
            .status()
            .unwrap_or_else(|e| {
                panic!("bench files needs `sox` ({e}); Debian: sox libsox-fmt-all")
            });
        assert!(status.success(), "sox could not make {}", src.display());
        Self { dir, made: 1 }
    }

    /// The first `n` files, made (copied) as needed.
    fn paths(&mut self, n: usize) -> Vec<PathBuf> {
        let src = self.dir.join("s0.wav");
        while self.made < n {
            std::fs::copy(&src, self.path(self.made)).expect("copying a test file");
            self.made += 1;
        }
        (0..n).map(|i| self.path(i)).collect()
    }

    fn path(&self, i: usize) -> PathBuf {
        self.dir.join(format!("s{i}.wav"))
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const CFG: NodeConfig = NodeConfig {
    sample_rate: RATE,
    max_block: BLOCK,
};

fn settings(path: &Path) -> PlayerSettings {
    PlayerSettings {
        path: path.to_path_buf(),
        read_ahead: READ_AHEAD,
        ..PlayerSettings::default()
    }
}

fn creek_options() -> ReadStreamOptions<SymphoniaDecoder> {
    ReadStreamOptions {
        block_size: CHUNK,
        num_look_ahead_blocks: CHUNKS,
        num_cache_blocks: 0,
        num_caches: 1,
        ..ReadStreamOptions::default()
    }
}

/// Fills a new creek stream's read-ahead: creek requests its first blocks on a seek (its
/// examples seek, or cache and seek, before `block_until_ready`).
fn start_creek(s: &mut ReadDiskStream<SymphoniaDecoder>) {
    s.seek(0, SeekMode::NoCache).expect("creek seeks");
    s.block_until_ready().expect("creek buffers");
}

/// What one trial with `n` streams gave.
struct Trial {
    underrun_frames: u64,
    /// Bytes one stream holds for its read-ahead.
    bytes_per_stream: f64,
}

/// Ours: `n` players in one graph on the virtual device for `seconds`.
fn ours(paths: &[PathBuf], seconds: f64) -> Trial {
    let reader = Reader::new(DEFAULT_POLL);
    let mut g = Graph::new();
    let out = g.add("out", Output::new(2));
    let mut monitors = Vec::new();
    let mut bytes = 0.0;
    for (i, p) in paths.iter().enumerate() {
        let node = Player::open(&settings(p), &CFG, &reader)
            .unwrap_or_else(|e| panic!("opening {}: {e}", p.display()));
        monitors.push(node.player_monitor());
        bytes = node.ring_bytes() as f64;
        let id = g.add(format!("p{i}"), node);
        g.connect(id, out);
    }
    g.set_output(out);
    let schedule = g
        .compile(CompileConfig {
            sample_rate: RATE,
            max_block: BLOCK,
        })
        .expect("the graph compiles");
    let frames = (seconds * f64::from(RATE)) as u64;
    let run = Virtual::new(None)
        .run(Engine::new(schedule), RunLength { frames })
        .expect("the virtual device runs");
    drop(run);
    Trial {
        underrun_frames: monitors.iter().map(|m| m.status().underrun_frames()).sum(),
        bytes_per_stream: bytes,
    }
}

/// The audio thread's pacing and priority, as the virtual device sets them.
fn ticker() -> Ticker {
    let options = TickerOptions {
        timer_slack: Some(Duration::from_nanos(1)),
        ..TickerOptions::default()
    };
    Ticker::with_options(
        Duration::from_secs_f64(BLOCK as f64 / f64::from(RATE)),
        &options,
    )
}

/// creek: `n` streams read on a paced thread for `seconds`.
fn creek(paths: &[PathBuf], seconds: f64) -> Trial {
    let mut streams: Vec<ReadDiskStream<SymphoniaDecoder>> = paths
        .iter()
        .map(|p| {
            ReadDiskStream::new(p.clone(), 0, creek_options())
                .unwrap_or_else(|e| panic!("creek opening {}: {e:?}", p.display()))
        })
        .collect();
    for s in &mut streams {
        start_creek(s);
    }
    // Its prefetch blocks and the read buffer `read` copies into (no cache blocks).
    let bytes = ((CHUNKS + 1) * CHUNK * 2 * std::mem::size_of::<f32>()) as f64;
    let blocks = (seconds * f64::from(RATE)) as usize / BLOCK;
    let underrun_frames = std::thread::spawn(move || {
        let mut mix = vec![0.0f32; 2 * BLOCK];
        let mut ticker = ticker();
        let mut underruns = 0u64;
        for b in 0..blocks {
            if b > 0 {
                ticker.wait();
            }
            mix.fill(0.0);
            for s in &mut streams {
                if !s.is_ready().unwrap_or(false) {
                    underruns += BLOCK as u64;
                    continue;
                }
                let data = s.read(BLOCK).expect("creek reads");
                for c in 0..2 {
                    for (m, v) in mix[c * BLOCK..].iter_mut().zip(data.read_channel(c)) {
                        *m += v;
                    }
                }
            }
            std::hint::black_box(&mix);
        }
        underruns
    })
    .join()
    .expect("creek's paced thread");
    Trial {
        underrun_frames,
        bytes_per_stream: bytes,
    }
}

fn trial(which: &str, paths: &[PathBuf], seconds: f64) -> Trial {
    match which {
        "downbeat" => ours(paths, seconds),
        _ => creek(paths, seconds),
    }
}

/// The most streams `which` runs for `seconds` with no underrun: doubling from 4, then
/// halving the gap twice; at most `cap`. Also the memory per stream at that count.
fn most_streams(which: &str, files: &mut Files, seconds: f64, cap: usize) -> (usize, f64) {
    let (mut good, mut bad) = (0usize, None::<usize>);
    let mut bytes = 0.0;
    let mut n = 4;
    while n <= cap {
        let t = trial(which, &files.paths(n), seconds);
        if t.underrun_frames > 0 {
            bad = Some(n);
            break;
        }
        good = n;
        bytes = t.bytes_per_stream;
        n *= 2;
    }
    if let Some(mut hi) = bad {
        for _ in 0..2 {
            let mid = (good + hi) / 2;
            if mid <= good || mid >= hi {
                break;
            }
            let t = trial(which, &files.paths(mid), seconds);
            if t.underrun_frames > 0 {
                hi = mid;
            } else {
                good = mid;
                bytes = t.bytes_per_stream;
            }
        }
    }
    (good, bytes)
}

/// Streams per core before the first underrun, and memory per stream.
pub fn streams(common: &Common, report: &mut Report) {
    let (seconds, cap) = if common.quick { (0.5, 8) } else { (3.0, 2048) };
    // A second longer than a trial: many short files keep the disk used small.
    let mut files = Files::new(seconds as u32 + 1);
    let runs = common
        .runs
        .unwrap_or(if common.quick { 1 } else { 3 })
        .max(1);
    let mut counts = [Vec::new(), Vec::new()];
    let mut kib = [Vec::new(), Vec::new()];
    for k in 0..runs {
        for which in alternating(&IMPLS, k) {
            let i = IMPLS.iter().position(|&x| x == which).unwrap();
            let (n, bytes) = most_streams(which, &mut files, seconds, cap);
            eprintln!(
                "streams: {which} run {k}: {n} streams, {:.0} KiB each",
                bytes / 1024.0
            );
            counts[i].push(n as f64);
            kib[i].push(bytes / 1024.0);
        }
    }
    for (i, which) in IMPLS.iter().enumerate() {
        report.add("streams_per_core", which, "streams", &counts[i]);
        report.add("memory_per_stream", which, "KiB", &kib[i]);
    }
    report.ratio(
        "streams",
        "streams_per_core",
        "downbeat",
        "creek",
        Better::Higher,
    );
    report.notes.push(format!(
        "streams_per_core: {seconds} s trials at {BLOCK} frames, 48 kHz stereo 16-bit WAVs, \
         doubling from 4 then two halvings, capped at {cap}; read-ahead {READ_AHEAD} s for both \
         ({CHUNKS} x {CHUNK} frames); memory per stream is the read-ahead held (computed)"
    ));
}

/// Seek latencies of one implementation, in milliseconds: `seeks` uncached seeks to frames
/// spread over the file, each followed by some playing.
fn seek_latencies(which: &str, path: &Path, seeks: usize, file_frames: u64) -> Vec<f64> {
    let path = path.to_path_buf();
    let which = which.to_string();
    let reader = Reader::new(DEFAULT_POLL);
    std::thread::spawn(move || {
        let mut ticker = ticker();
        let mut latencies = Vec::with_capacity(seeks);
        // A fixed sequence of targets, away from the start and the end.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut target = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            RATE as u64 + x % (file_frames - 3 * RATE as u64)
        };
        if which == "downbeat" {
            let mut node = Player::open(&settings(&path), &CFG, &reader).expect("player");
            let mut out = vec![0.0f32; 2 * BLOCK];
            let mut n = 0u64;
            let mut block = |node: &mut Player, out: &mut [f32]| {
                let ctx = ProcessContext::new(RATE, BLOCK, n * BLOCK as u64);
                n += 1;
                node.process(
                    &ctx,
                    AudioRef::new(&[], 0, BLOCK, BLOCK),
                    AudioMut::new(out, 2, BLOCK, BLOCK),
                );
                ticker.wait();
            };
            for _ in 0..seeks {
                let frame = target();
                node.set_param(P_SEEK, (frame as f64 / f64::from(RATE)) as f32);
                let mut waited = 0usize;
                loop {
                    block(&mut node, &mut out);
                    if let Some(at) = out[..BLOCK].iter().position(|&v| v != 0.0) {
                        waited += at;
                        break;
                    }
                    waited += BLOCK;
                }
                latencies.push(waited as f64 * 1000.0 / f64::from(RATE));
                for _ in 0..20 {
                    block(&mut node, &mut out);
                }
            }
        } else {
            let mut s: ReadDiskStream<SymphoniaDecoder> =
                ReadDiskStream::new(path.clone(), 0, creek_options()).expect("creek opens");
            start_creek(&mut s);
            let mut mix = vec![0.0f32; BLOCK];
            let mut play = |s: &mut ReadDiskStream<SymphoniaDecoder>, mix: &mut [f32]| -> bool {
                let ready = s.is_ready().unwrap_or(false);
                if ready {
                    let data = s.read(BLOCK).expect("creek reads");
                    mix[..data.num_frames()].copy_from_slice(data.read_channel(0));
                }
                ticker.wait();
                ready
            };
            for _ in 0..seeks {
                let frame = target();
                s.seek(frame as usize, SeekMode::NoCache)
                    .expect("creek seeks");
                let mut waited = 0usize;
                while !play(&mut s, &mut mix) {
                    waited += BLOCK;
                }
                latencies.push(waited as f64 * 1000.0 / f64::from(RATE));
                for _ in 0..20 {
                    play(&mut s, &mut mix);
                }
            }
        }
        latencies
    })
    .join()
    .expect("the seeking thread")
}

/// Seek latency p50/p99, ours against creek's, uncached seeks on one stream.
pub fn seek(common: &Common, report: &mut Report) {
    let mut files = Files::new(file_seconds(common.quick));
    let path = files.paths(1).remove(0);
    let file_frames = u64::from(file_seconds(common.quick)) * u64::from(RATE);
    let seeks = if common.quick { 5 } else { 100 };
    let runs = common
        .runs
        .unwrap_or(if common.quick { 1 } else { 3 })
        .max(1);
    let mut p50 = [Vec::new(), Vec::new()];
    let mut p99 = [Vec::new(), Vec::new()];
    for k in 0..runs {
        for which in alternating(&IMPLS, k) {
            let i = IMPLS.iter().position(|&x| x == which).unwrap();
            let mut l = seek_latencies(which, &path, seeks, file_frames);
            l.sort_by(f64::total_cmp);
            p50[i].push(quantile(&l, 0.5));
            p99[i].push(quantile(&l, 0.99));
        }
    }
    for (i, which) in IMPLS.iter().enumerate() {
        report.add("seek_p50", which, "ms", &p50[i]);
        report.add("seek_p99", which, "ms", &p99[i]);
    }
    report.ratio("seek_p50", "seek_p50", "downbeat", "creek", Better::Lower);
    report.ratio("seek_p99", "seek_p99", "downbeat", "creek", Better::Lower);
    report.notes.push(format!(
        "seek: {seeks} uncached seeks per run (no cue; creek SeekMode::NoCache), one stream, \
         seek to first audible frame on a thread paced at {BLOCK} frames"
    ));
}

/// Another process writing and syncing a large file in a loop.
struct DiskWriter(Child);

impl DiskWriter {
    fn start(dir: &Path, megabytes: u32) -> Self {
        let big = dir.join("big.bin");
        let script = format!(
            "while true; do dd if=/dev/zero of='{}' bs=1M count={megabytes} conv=fsync status=none; done",
            big.display()
        );
        let child = Command::new("sh")
            .args(["-c", &script])
            // Its own process group, so that stopping it stops the `dd` it is running too.
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the disk writer (sh, dd)");
        // Let it get going.
        std::thread::sleep(Duration::from_millis(300));
        Self(child)
    }
}

impl Drop for DiskWriter {
    fn drop(&mut self) {
        // The group this bench started (the shell and its `dd`), by its id.
        if let Ok(pid) = i32::try_from(self.0.id()) {
            // SAFETY: kill has no memory-safety preconditions; the group is our child's.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.0.wait();
    }
}

/// Underrun frames with `n` streams while another process writes and syncs a large file.
pub fn disk_load(common: &Common, report: &mut Report) {
    let mut files = Files::new(file_seconds(common.quick));
    let (n, seconds, megabytes) = if common.quick {
        (4, 0.5, 16)
    } else {
        (32, 8.0, 512)
    };
    let paths = files.paths(n);
    let runs = common
        .runs
        .unwrap_or(if common.quick { 1 } else { 3 })
        .max(1);
    let mut underruns = [Vec::new(), Vec::new()];
    let writer = DiskWriter::start(&files.dir, megabytes);
    for k in 0..runs {
        for which in alternating(&IMPLS, k) {
            let i = IMPLS.iter().position(|&x| x == which).unwrap();
            underruns[i].push(trial(which, &paths, seconds).underrun_frames as f64);
        }
    }
    drop(writer);
    let case = format!("underrun_frames_{n}_streams_disk_writes");
    for (i, which) in IMPLS.iter().enumerate() {
        report.add(&case, which, "frames", &underruns[i]);
    }
    report.notes.push(format!(
        "{case}: {seconds} s runs while `dd … conv=fsync` writes {megabytes} MB in a loop"
    ));
}
