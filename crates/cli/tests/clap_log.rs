//! What a CLAP plugin logs from the audio thread is printed while `downbeat run` goes on,
//! not at its end, and every message is either printed or counted as lost: the test
//! plugins' host probe, in its log-flood mode, logs `process call N` in its first three
//! calls and N more messages in every call.

#![cfg(feature = "clap")]

#[path = "../../plugin/tests/clap_support/mod.rs"]
mod clap_support;
mod support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap_support::{test_plugins, HOST_PROBE_ID, PROBE_NAME};

const BLOCK: usize = 256;
const RATE: usize = 48_000;

/// A project playing a sine through the probe, whose state makes it log `flood` messages in
/// every `process` call.
fn flood_project(name: &str, flood: u32) -> PathBuf {
    let state = support::tmp("clap-log", &format!("{name}.clapstate"));
    let mut bytes = b"DBPROBE1".to_vec();
    bytes.extend_from_slice(&1f32.to_le_bytes());
    bytes.extend_from_slice(&flood.to_le_bytes());
    std::fs::write(&state, bytes).unwrap();
    let project = support::tmp("clap-log", &format!("{name}.toml"));
    std::fs::write(
        &project,
        format!(
            "sample_rate = {RATE}\nblock_size = {BLOCK}\nedges = [\"osc -> probe -> out\"]\n\
             [nodes.osc]\ntype = \"sine\"\n\
             [nodes.probe]\ntype = \"clap\"\npath = \"{}\"\nid = \"{HOST_PROBE_ID}\"\n\
             state = \"{}\"\n\
             [nodes.out]\ntype = \"output\"\n",
            test_plugins().display(),
            state.display()
        ),
    )
    .unwrap();
    project
}

/// The probe's lines on stderr, each with when it was read, and when the run ended.
struct Heard {
    lines: Vec<(Instant, String)>,
    ended: Instant,
}

fn run(project: &PathBuf, device: &str, seconds: u32) -> Heard {
    let mut child = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("run")
        .arg(project)
        .args(["--device", device, "--seconds", &seconds.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the downbeat binary runs");
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut lines = Vec::new();
    for line in stderr.lines() {
        lines.push((Instant::now(), line.unwrap()));
    }
    let status = child.wait().unwrap();
    let ended = Instant::now();
    let text: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    assert!(status.success(), "{status}: {}", text.join("\n"));
    Heard { lines, ended }
}

impl Heard {
    /// Messages printed with text `m`.
    fn count(&self, m: &str) -> usize {
        let want = format!("[downbeat] clap {PROBE_NAME}: INFO: {m}");
        self.lines.iter().filter(|(_, l)| *l == want).count()
    }

    /// Messages printed: the flood and the first three calls' own.
    fn printed(&self) -> usize {
        self.count("log flood")
            + (1..=3)
                .map(|n| self.count(&format!("process call {n}")))
                .sum::<usize>()
    }

    /// The sum of the losses the lines report.
    fn lost(&self) -> usize {
        let prefix = format!("[downbeat] clap {PROBE_NAME}: ");
        self.lines
            .iter()
            .filter_map(|(_, l)| {
                let rest = l.strip_prefix(&prefix)?;
                let (n, tail) = rest.split_once(' ')?;
                tail.starts_with("more message(s) logged from the audio thread were lost")
                    .then(|| n.parse::<usize>().unwrap())
            })
            .sum()
    }
}

#[test]
fn messages_logged_on_the_audio_thread_are_printed_while_the_run_goes_on() {
    // Two seconds on the virtual device, which keeps real time: 375 calls of 256 frames.
    let heard = run(&flood_project("live", 4), "virtual", 2);
    let calls = 2 * RATE / BLOCK;
    let first = heard
        .lines
        .iter()
        .find(|(_, l)| l.ends_with("INFO: log flood"))
        .map(|(t, _)| *t)
        .expect("the flood was printed");
    // Printed at the end, the first message would come with the last; drained as the run
    // goes on, it comes in the first tenth of a second. A second of the two is the margin.
    let before_end = heard.ended - first;
    assert!(
        before_end > Duration::from_secs(1),
        "the first message came {before_end:?} before the run ended"
    );
    let printed = heard.printed();
    assert_eq!(printed + heard.lost(), 3 + 4 * calls, "printed {printed}");
}

#[test]
fn a_flood_faster_than_the_drain_is_printed_or_counted_to_the_last_message() {
    // Offline, as fast as the machine goes: 40 messages a call outrun a drain every 10 ms
    // (the ring holds 64), so most are lost, and each loss is told.
    let heard = run(&flood_project("offline", 40), "offline", 10);
    let calls = 10 * RATE / BLOCK;
    let (printed, lost) = (heard.printed(), heard.lost());
    assert!(lost > 0, "nothing lost: the test no longer floods the ring");
    assert_eq!(
        printed + lost,
        3 + 40 * calls,
        "printed {printed}, lost {lost}"
    );
}
