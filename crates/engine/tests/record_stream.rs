//! Recording through the writer thread: the audio thread's write under the guard, a slow
//! disk on a real-time device (frames lost, counted, silence in their place) and offline
//! (nothing lost, bit-identical), and the RF64 header as `sox` and `ffmpeg` read it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use downbeat::device::{Device, Offline, Renderer, RunLength, Virtual};
use downbeat::project::Project;
use downbeat::record::{RecordOptions, Recorder, WhenFull};
use downbeat::Engine;
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

mod support;

fn engine() -> Engine {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/projects/hello.toml"
    );
    Engine::new(Project::load(path).unwrap().build().unwrap())
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("downbeat-record-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn samples(path: &Path) -> Vec<f32> {
    let mut r = hound::WavReader::open(path)
        .unwrap_or_else(|e| panic!("{} does not open: {e}", path.display()));
    r.samples::<f32>().map(Result::unwrap).collect()
}

/// A disk made slow on purpose: a pause before every write, and a ring of `ring` seconds.
fn slow(pause_ms: u64, ring: f64) -> RecordOptions {
    RecordOptions {
        ring_seconds: ring,
        write_pause: Duration::from_millis(pause_ms),
        ..RecordOptions::default()
    }
}

#[test]
fn the_audio_threads_write_is_clean_also_when_the_ring_is_full() {
    // A ring of 50 ms and a writer that sleeps 10 s before its first write: the guarded
    // blocks fill the ring, then lose frames; both paths run under the guard.
    let path = tmp("guard.wav");
    let options = slow(10_000, 0.05);
    let (recorder, tap) = Recorder::start(&path, 2, 48_000, &options, WhenFull::CountLost).unwrap();
    let mut r = Renderer::new(engine(), 48_000).record_stream(tap);
    r.render(256);
    let report = guard::check(|| {
        for _ in 0..40 {
            r.render(256);
        }
    });
    support::assert_complete(&report);
    report.assert_clean();
    assert!(
        recorder.lost_frames() > 0,
        "the ring never filled, so the lost path was not under the guard"
    );
    drop(r);
    drop(recorder); // its thread ends after the pause, nothing waits for it
}

#[test]
fn a_slow_disk_on_the_virtual_device_loses_frames_counts_them_and_the_run_completes() {
    let path = tmp("slow-virtual.wav");
    let frames = 48_000;
    // A ring of 20 ms and 150 ms per write of (at most) 20 ms: the disk takes about a
    // seventh of what is played.
    let run = Virtual::new(Some(path.clone()))
        .record_options(slow(150, 0.02))
        .run(engine(), RunLength { frames })
        .unwrap();
    assert_eq!(run.report.frames, frames, "the run completed");
    let rec = &run.report.recorded[..];
    assert_eq!(rec.len(), 1);
    assert!(
        rec[0].lost_frames > frames / 2,
        "lost {}",
        rec[0].lost_frames
    );
    assert!(rec[0].lost_frames < frames);
    // The lost frames are silence in their place: the file is as long as the run.
    assert_eq!(rec[0].frames, frames);
    let s = samples(&path);
    assert_eq!(s.len() as u64, frames * 2);
    assert!(
        s.iter().any(|&x| x != 0.0),
        "nothing but silence was written"
    );
}

#[test]
fn frames_lost_are_silence_exactly_where_and_as_many_as_counted() {
    // Every frame played is 1.0: in the file, a 0.0 is a lost frame and nothing else.
    let path = tmp("slow-constant.wav");
    let project = Project::parse(&support::constant_through_gain(128), "c.toml").unwrap();
    let frames = 24_000;
    let run = Virtual::new(Some(path.clone()))
        .record_options(slow(60, 0.01))
        .run(Engine::new(project.build().unwrap()), RunLength { frames })
        .unwrap();
    let lost = run.report.recorded[0].lost_frames;
    assert!(lost > 0, "nothing was lost, so nothing was tested");
    let s = samples(&path);
    assert_eq!(s.len() as u64, frames);
    let silent = s.iter().filter(|&&x| x == 0.0).count() as u64;
    assert_eq!(silent, lost, "silent frames against frames counted lost");
    assert!(s.iter().all(|&x| x == 0.0 || x == 1.0));
    // Played frames came in runs between gaps: more than one run means the gaps sit
    // inside the file, not all at its end.
    let runs = s.windows(2).filter(|w| w[0] == 0.0 && w[1] == 1.0).count();
    assert!(runs >= 2, "{runs} gap(s) followed by audio");
}

#[test]
fn a_slow_disk_offline_loses_nothing_and_the_file_is_bit_identical() {
    let frames = 48_000;
    let normal = tmp("offline-normal.wav");
    let slowed = tmp("offline-slow.wav");
    let a = Offline::new(Some(normal.clone()))
        .run(engine(), RunLength { frames })
        .unwrap();
    // A ring of 10 ms and 20 ms per write: the render waits about twice its length.
    let b = Offline::new(Some(slowed.clone()))
        .record_options(slow(20, 0.01))
        .run(engine(), RunLength { frames })
        .unwrap();
    assert_eq!(a.report.recorded[0].lost_frames, 0);
    assert_eq!(b.report.recorded[0].lost_frames, 0);
    assert!(
        b.report.wall_seconds > 0.4,
        "the writer was not slow ({} s), so nothing was tested",
        b.report.wall_seconds
    );
    let (x, y) = (samples(&normal), samples(&slowed));
    assert_eq!(x.len() as u64, frames * 2);
    support::assert_bit_identical(&x, &y, "the slow-disk render");
    assert_eq!(
        std::fs::read(&normal).unwrap(),
        std::fs::read(&slowed).unwrap(),
        "the files differ"
    );
}

/// Set in the child process of [`a_slow_disk_warns_at_most_once_a_second_with_the_count_lost`]
/// to the file its run records.
const WARNINGS_CHILD: &str = "DOWNBEAT_RECORD_WARNINGS_CHILD";
/// How the child states the frames its run lost, on stdout.
const LOST_LINE: &str = "downbeat-record-stream: lost ";

/// The child's side (hence ignored): does nothing unless `DOWNBEAT_RECORD_WARNINGS_CHILD`
/// names the file to record. 2.5 s on the virtual device with a disk that takes 150 ms per
/// write of at most 20 ms: frames are lost all along.
#[test]
#[ignore = "child-process entry point of the warning test"]
fn slow_disk_for_two_and_a_half_seconds() {
    let Some(path) = std::env::var_os(WARNINGS_CHILD) else {
        return;
    };
    let project = Project::parse(&support::constant_through_gain(256), "c.toml").unwrap();
    let run = Virtual::new(Some(path.into()))
        .record_options(slow(150, 0.02))
        .run(
            Engine::new(project.build().unwrap()),
            RunLength { frames: 120_000 },
        )
        .unwrap();
    println!("{LOST_LINE}{}", run.report.recorded[0].lost_frames);
}

/// The writer's warnings go to the process's stderr from a thread of its own, which the test
/// harness would capture: the run is a child process, whose stderr is read whole.
#[test]
fn a_slow_disk_warns_at_most_once_a_second_with_the_count_lost() {
    let path = tmp("slow-warnings.wav");
    let started = std::time::Instant::now();
    let out = Command::new(std::env::current_exe().expect("test binary path"))
        .args([
            "--exact",
            "slow_disk_for_two_and_a_half_seconds",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(WARNINGS_CHILD, &path)
        .output()
        .expect("re-run the test binary");
    // Longer than the writer lived, so at most once a second allows one warning per whole
    // second of it and one more.
    let seconds = started.elapsed().as_secs_f64();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    let lost: u64 = stdout
        .lines()
        // The harness's "test NAME ... " comes first on the line.
        .find_map(|l| l.split_once(LOST_LINE).map(|(_, n)| n))
        .unwrap_or_else(|| panic!("the child said nothing of its losses:\n{stdout}"))
        .parse()
        .unwrap();
    assert!(lost > 0, "nothing was lost, so nothing was tested");
    let said: Vec<u64> = stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .map(|l| {
            let count = l
                .strip_prefix(&format!("warning: recording `{}`: ", path.display()))
                .and_then(|rest| rest.split_once(" frame(s) lost so far"))
                .unwrap_or_else(|| panic!("not the file's loss: {l}"))
                .0;
            count.parse().unwrap_or_else(|e| panic!("{l}: {e}"))
        })
        .collect();
    assert!(
        !said.is_empty() && said.len() as f64 <= seconds.floor() + 1.0,
        "{} warnings in {seconds:.2} s:\n{stderr}",
        said.len()
    );
    // Each says the count so far: growing, and never more than the run lost in all.
    assert!(
        said.windows(2).all(|w| w[0] < w[1]) && said.iter().all(|&n| n > 0 && n <= lost),
        "counts {said:?}, {lost} lost in all:\n{stderr}"
    );
    let _ = std::fs::remove_file(&path);
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn tool(name: &str, args: &[&str]) -> std::process::Output {
    let out = Command::new(name).args(args).output().unwrap_or_else(|e| {
        panic!("`{name}` does not run ({e}); install Debian's sox, libsox-fmt-all and ffmpeg")
    });
    assert!(
        out.status.success(),
        "`{name} {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn past_the_threshold_the_file_is_rf64_and_sox_and_ffmpeg_read_it() {
    let path = tmp("rf64.wav");
    let frames = 12_345u64;
    let options = RecordOptions {
        rf64_after: 64 * 1024,
        ..RecordOptions::default()
    };
    Offline::new(Some(path.clone()))
        .record_options(options)
        .run(engine(), RunLength { frames })
        .unwrap();
    let b = std::fs::read(&path).unwrap();
    let data = frames * 2 * 4;
    let header = b.len() as u64 - data;
    assert_eq!(&b[0..4], b"RF64");
    assert_eq!(&b[12..16], b"ds64");
    assert_eq!(u32_at(&b, 4), u32::MAX, "RF64 says its sizes are in ds64");
    assert_eq!(u64_at(&b, 20), b.len() as u64 - 8, "ds64 RIFF size");
    assert_eq!(u64_at(&b, 28), data, "ds64 data size");
    assert_eq!(u64_at(&b, 36), frames, "ds64 sample count");
    assert_eq!(&b[header as usize - 8..header as usize - 4], b"data");

    let p = path.to_str().unwrap();
    let soxi = tool("sox", &["--i", "-s", p]);
    assert_eq!(
        String::from_utf8_lossy(&soxi.stdout).trim(),
        frames.to_string()
    );
    let floats = |raw: &[u8]| -> Vec<f32> {
        raw.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let ours = floats(&b[header as usize..]);
    assert!(ours.iter().any(|&x| x != 0.0));
    // sox's decode is ours, sample for sample, within the 32-bit integers sox works in.
    let decoded = floats(&tool("sox", &[p, "-t", "f32", "-"]).stdout);
    assert_eq!(decoded.len(), ours.len(), "sox decodes every frame");
    let worst = decoded
        .iter()
        .zip(&ours)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-7, "sox's decode differs by {worst}");
    let probe = tool(
        "ffprobe",
        &[
            "-v",
            "error",
            "-count_packets",
            "-show_entries",
            "stream=sample_rate,channels,codec_name",
            "-of",
            "csv=p=0",
            p,
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&probe.stdout).trim(),
        "pcm_f32le,48000,2"
    );
    // ffmpeg's decode is ours, bit for bit.
    let raw = tool("ffmpeg", &["-v", "error", "-i", p, "-f", "f32le", "-"]).stdout;
    support::assert_bit_identical(&floats(&raw), &ours, "ffmpeg's decode of the RF64 file");
}

#[test]
fn a_ring_too_large_is_refused_with_the_file_named_and_no_file_made() {
    let path = tmp("huge-ring.wav");
    let options = RecordOptions {
        ring_seconds: 1e6,
        ..RecordOptions::default()
    };
    let e = Recorder::start(&path, 2, 48_000, &options, WhenFull::CountLost).unwrap_err();
    assert!(
        matches!(e, downbeat::device::DeviceError::Config(_)),
        "{e:?}"
    );
    let message = e.to_string();
    assert!(
        message.contains("huge-ring.wav") && message.contains("1000000 s"),
        "{message}"
    );
    assert!(!path.exists(), "a file was made");
}

/// The writer thread runs at `SCHED_FIFO` 20 (below the audio thread and the workers, above
/// every ordinary thread), so that a busy machine does not starve it into losing frames.
/// Needs the privilege to set it (root, or an `rtprio` limit of 20): without, this fails.
#[test]
fn the_writer_runs_at_a_real_time_priority_below_the_audio_threads() {
    let path = tmp("writer-priority.wav");
    let (recorder, tap) = Recorder::start(
        &path,
        2,
        48_000,
        &RecordOptions::default(),
        WhenFull::CountLost,
    )
    .unwrap();
    // The writer sets its priority first thing; give it a moment to start.
    let found = support::thread_priority("downbeat-record", 20);
    drop(tap);
    recorder.finish().unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        found,
        Some((20, libc::SCHED_FIFO)),
        "the writer's (priority, policy)"
    );
}
