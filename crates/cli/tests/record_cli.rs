//! `downbeat run --out` on the virtual device streams to disk: memory does not grow with
//! the run, a run killed with SIGKILL leaves a WAV that `sox` reads and that holds what was
//! played up to the last fraction of a second, and a slow disk is reported.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::{downbeat, read_wav, repo, tmp};

const HELLO: &str = "examples/projects/hello.toml";

/// Starts `downbeat` with `args` in the repository's root.
fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .args(args)
        .current_dir(repo())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the downbeat binary starts")
}

/// Waits for `child` and returns its exit status and peak resident memory (kB).
fn wait_peak_rss(child: std::process::Child) -> (i32, i64) {
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value for the kernel to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `child` is our own unreaped child; `status` and `usage` outlive the call.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed");
    (status, usage.ru_maxrss)
}

#[test]
fn a_40_s_recording_holds_no_more_memory_than_a_4_s_one() {
    let (short, long) = (tmp("record", "4s.wav"), tmp("record", "40s.wav"));
    // Both at once: the test lasts 40 s, not 44.
    let a = spawn(&[
        "run",
        HELLO,
        "--seconds",
        "4",
        "--out",
        short.to_str().unwrap(),
    ]);
    let b = spawn(&[
        "run",
        HELLO,
        "--seconds",
        "40",
        "--out",
        long.to_str().unwrap(),
    ]);
    let (sa, rss_short) = wait_peak_rss(a);
    let (sb, rss_long) = wait_peak_rss(b);
    assert_eq!((sa, sb), (0, 0), "a run failed");
    assert_eq!(read_wav(&short).0.len(), 4 * 48_000 * 2);
    assert_eq!(read_wav(&long).0.len(), 40 * 48_000 * 2);
    eprintln!("peak RSS: 4 s {rss_short} kB, 40 s {rss_long} kB");
    // 36 s more of stereo float in memory would be 13.8 MB.
    assert!(
        rss_long <= rss_short + 4 * 1024,
        "the 40 s run peaked at {rss_long} kB, the 4 s one at {rss_short} kB"
    );
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

#[test]
fn a_run_killed_with_sigkill_leaves_a_wav_sox_reads_with_all_but_the_last_second() {
    let path = tmp("record", "killed.wav");
    let _ = std::fs::remove_file(&path);
    let mut child = spawn(&[
        "run",
        HELLO,
        "--seconds",
        "60",
        "--out",
        path.to_str().unwrap(),
    ]);
    // The file is created just before the first block: from then on, audio is played.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !path.exists() {
        assert!(Instant::now() < deadline, "the run never created its file");
        std::thread::sleep(Duration::from_millis(2));
    }
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    child.kill().unwrap(); // SIGKILL
    let played = started.elapsed().as_secs_f64();
    child.wait().unwrap();

    let p = path.to_str().unwrap();
    let soxi = Command::new("sox")
        .args(["--i", "-s", p])
        .output()
        .expect("sox runs (Debian: sox, libsox-fmt-all)");
    assert!(
        soxi.status.success(),
        "sox cannot read the killed run's file: {}",
        String::from_utf8_lossy(&soxi.stderr)
    );
    let frames: u64 = String::from_utf8_lossy(&soxi.stdout)
        .trim()
        .parse()
        .unwrap();
    let seconds = frames as f64 / 48_000.0;
    // All but the last second: within one second plus one header update (0.5 s), and
    // 0.2 s for the kill itself on a busy machine.
    assert!(
        seconds >= played - 1.7 && seconds <= played + 0.05,
        "the file holds {seconds:.3} s of {played:.3} s played"
    );
    // The header agrees with the data: the sizes it states are there.
    let b = std::fs::read(&path).unwrap();
    let data = u32_at(&b, 78) as u64;
    assert_eq!(data, frames * 8, "data size against sox's count");
    assert_eq!(u32_at(&b, 4) as u64, data + 74, "RIFF size");
    assert!(
        b.len() as u64 >= 82 + data,
        "the header states more than the file holds"
    );
    // And the data is what was played: the offline render of the same project.
    let reference = tmp("record", "reference.wav");
    let out = downbeat(&[
        "run",
        HELLO,
        "--device",
        "offline",
        "--seconds",
        "4",
        "--out",
        reference.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let (want, _) = read_wav(&reference);
    let got = floats(&b[82..82 + data as usize]);
    support::assert_bit_identical(&got, &want[..got.len()], "the killed run's file");
}

fn floats(raw: &[u8]) -> Vec<f32> {
    raw.chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn a_slow_disk_is_reported_and_the_run_completes() {
    let path = tmp("record", "slow.wav");
    // A ring of 20 ms and 150 ms per write: most frames are lost.
    let out = downbeat(&[
        "run",
        HELLO,
        "--seconds",
        "1.5",
        "--json",
        "--out",
        path.to_str().unwrap(),
        "--test-record-pause-ms",
        "150",
        "--test-record-ring-seconds",
        "0.02",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rec = &summary["recordings"][0];
    assert_eq!(rec["path"], path.to_str().unwrap());
    assert_eq!(rec["frames"], 72_000, "the file is as long as the run");
    let lost = rec["lost_frames"].as_u64().unwrap();
    assert!(lost > 36_000, "lost {lost}");
    assert!(
        stderr.contains(&format!(
            "warning: recording `{}` lost {lost} frame(s)",
            path.display()
        )),
        "{stderr}"
    );
    // While it happened, too (the writer thread says so once a second).
    assert!(stderr.contains("frame(s) lost so far"), "{stderr}");
    assert_eq!(read_wav(Path::new(&path)).0.len(), 72_000 * 2);
}
