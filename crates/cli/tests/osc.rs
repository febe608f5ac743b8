//! `downbeat run --osc`, driven by a client we did not write: liblo's `oscsend` (Debian's
//! `liblo-tools`). `oscsend` cannot send bundles, so bundles are sent from here with `rosc`.
//! A plugin's parameters changed over OSC survive in its saved state (issue 29).
//!
//! Without `oscsend` these tests fail (`scripts/deps.sh`, run by `./test`, installs it): a
//! missing client must never pass as a skipped test.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use rosc::{OscBundle, OscMessage, OscPacket, OscType};

mod support;

#[cfg(feature = "clap")]
#[path = "../../plugin/tests/clap_support/mod.rs"]
mod clap_support;

/// A constant 1.0 through a gain: the output is the gain, sample for sample.
fn constant() -> String {
    support::constant_through_gain(64)
}

/// Asserts that `oscsend` can be run: the OSC tests never skip to green without their client.
fn require_oscsend(test: &str) {
    if let Err(e) = Command::new("oscsend").output() {
        panic!("{test}: oscsend cannot be run ({e}); install liblo-tools (scripts/deps.sh does)");
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("downbeat-osc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A `downbeat run` serving OSC on a free port, and the port it listens on.
struct Live {
    child: Child,
    addr: SocketAddr,
    stderr: mpsc::Receiver<String>,
}

impl Live {
    fn start(project: &Path, args: &[&str]) -> Live {
        let mut child = Command::new(env!("CARGO_BIN_EXE_downbeat"))
            .arg("run")
            .arg(project)
            .args(["--osc", "127.0.0.1:0", "--json"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, stderr) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let line = stderr
            .recv_timeout(Duration::from_secs(30))
            .expect("downbeat says where it listens");
        let addr = line
            .strip_prefix("osc: listening on udp ")
            .unwrap_or_else(|| panic!("unexpected first line: {line}"))
            .parse()
            .unwrap();
        Live {
            child,
            addr,
            stderr,
        }
    }

    fn oscsend(&self, address: &str, types: &str, args: &[&str]) {
        let status = Command::new("oscsend")
            .arg(self.addr.ip().to_string())
            .arg(self.addr.port().to_string())
            .arg(address)
            .arg(types)
            .args(args)
            .status()
            .unwrap();
        assert!(status.success(), "oscsend {address} {types} {args:?}");
    }

    fn send_raw(&self, bytes: &[u8]) {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.send_to(bytes, self.addr).unwrap();
    }

    /// Waits for the run to end: the summary and the stderr lines after the first.
    fn finish(self) -> (serde_json::Value, Vec<String>) {
        let out = self.child.wait_with_output().unwrap();
        let log: Vec<String> = self.stderr.iter().collect();
        assert!(out.status.success(), "exit {:?}: {log:?}", out.status);
        let summary = serde_json::from_slice(&out.stdout).unwrap();
        (summary, log)
    }
}

fn samples(path: &Path) -> Vec<f32> {
    hound::WavReader::open(path)
        .unwrap()
        .samples::<f32>()
        .map(Result::unwrap)
        .collect()
}

fn events(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn bundle_at(at: SystemTime, messages: Vec<OscMessage>) -> Vec<u8> {
    rosc::encoder::encode(&OscPacket::Bundle(OscBundle {
        timetag: downbeat::control::osc::timetag(at),
        content: messages.into_iter().map(OscPacket::Message).collect(),
    }))
    .unwrap()
}

#[test]
fn oscsend_steps_and_ramps_a_gain_and_a_bundle_lands_at_its_timetag() {
    require_oscsend("oscsend_steps_and_ramps");
    let dir = scratch("effects");
    std::fs::write(dir.join("p.toml"), constant()).unwrap();
    let (wav, ev) = (dir.join("live.wav"), dir.join("ev.jsonl"));
    let live = Live::start(
        &dir.join("p.toml"),
        &[
            "--seconds",
            "3",
            "--out",
            wav.to_str().unwrap(),
            "--record-events",
            ev.to_str().unwrap(),
        ],
    );
    live.oscsend("/node/g/gain/step", "f", &["0.5"]);
    std::thread::sleep(Duration::from_millis(300));
    // An int is taken as the number it is (see the module docs of `control::osc`).
    live.oscsend("/node/g/gain/ramp", "if", &["0", "0.2"]);
    let sent = SystemTime::now();
    let bundle = bundle_at(
        sent + Duration::from_millis(500),
        vec![OscMessage {
            addr: "/node/g/gain/step".into(),
            args: vec![OscType::Float(0.75)],
        }],
    );
    live.send_raw(&bundle);
    let (summary, log) = live.finish();
    assert_eq!(summary["osc_applied"], 3, "{log:?}");
    assert_eq!(summary["osc_rejected"], 0, "{log:?}");

    let e = events(&ev);
    assert_eq!(e.len(), 3, "{e:?}");
    let frame = |i: usize| e[i]["frame"].as_u64().unwrap() as usize;
    assert_eq!(
        (e[0]["change"].as_str(), e[0]["value"].as_f64()),
        (Some("step"), Some(0.5))
    );
    assert_eq!(
        (e[1]["change"].as_str(), e[1]["to"].as_f64()),
        (Some("linear"), Some(0.0))
    );
    assert_eq!(e[1]["frames"], 9600, "0.2 s at 48 kHz");
    assert_eq!(
        (e[2]["change"].as_str(), e[2]["value"].as_f64()),
        (Some("step"), Some(0.75))
    );
    // Live messages land on a block start; the bundle 500 ms after it was sent (its frame
    // comes from the timetag, not from when it arrived).
    assert_eq!(frame(0) % 64, 0);
    assert_eq!(frame(1) % 64, 0);
    let gap = frame(2) - frame(1);
    assert!(
        // 0.5 s is 24,000 frames; the slack covers a loaded machine, where the virtual
        // device runs late and `oscsend` is slow to exit. Applied on arrival instead, the
        // bundle would land a block or two after the ramp.
        (4_800..96_000).contains(&gap),
        "bundle {gap} frames after the ramp"
    );

    let s = samples(&wav);
    assert_eq!(s.len(), 3 * 48_000);
    assert!(s[..frame(0)].iter().all(|&x| x == 1.0));
    assert!(s[frame(0)..frame(1)].iter().all(|&x| x == 0.5));
    for k in 0..9600 {
        let want = 0.5 * (1.0 - k as f64 / 9600.0);
        assert!(
            (f64::from(s[frame(1) + k]) - want).abs() < 1e-6,
            "ramp sample {k}: {} against {want}",
            s[frame(1) + k]
        );
    }
    assert!(s[frame(1) + 9600..frame(2)].iter().all(|&x| x == 0.0));
    assert!(s[frame(2)..].iter().all(|&x| x == 0.75));
}

#[test]
fn bad_packets_are_logged_counted_and_change_nothing() {
    require_oscsend("bad_packets");
    let dir = scratch("bad");
    std::fs::write(dir.join("p.toml"), constant()).unwrap();
    let (wav, ev) = (dir.join("live.wav"), dir.join("ev.jsonl"));
    let live = Live::start(
        &dir.join("p.toml"),
        &[
            "--seconds",
            "3",
            "--out",
            wav.to_str().unwrap(),
            "--record-events",
            ev.to_str().unwrap(),
        ],
    );
    live.send_raw(b"\x00\x01garbage that is not OSC");
    live.oscsend("/node/nosuch/gain", "f", &["0.5"]);
    live.oscsend("/node/g/gain", "s", &["loud"]);
    live.oscsend("/node/g/gain", "ff", &["0.5", "0.25"]);
    live.oscsend("/node/g/gain", "f", &["99"]);
    live.oscsend("/mixer/volume", "f", &["0.5"]);
    // A bundle with one bad message is refused whole.
    live.send_raw(&bundle_at(
        SystemTime::now(),
        vec![
            OscMessage {
                addr: "/node/g/gain".into(),
                args: vec![OscType::Float(0.5)],
            },
            OscMessage {
                addr: "/node/g/gain".into(),
                args: vec![OscType::Bool(true)],
            },
        ],
    ));
    let (summary, log) = live.finish();
    assert_eq!(summary["osc_rejected"], 7, "{log:?}");
    assert_eq!(summary["osc_applied"], 0, "{log:?}");
    let reasons = log.join("\n");
    for why in [
        "not an OSC packet",
        "unknown node `nosuch`",
        "argument 1 is a string",
        "2 argument(s) given",
        "got 99, expected a number from 0 to 16",
        "unknown address `/mixer/volume`",
        "argument 1 is a boolean",
    ] {
        assert!(reasons.contains(why), "no `{why}` in the log:\n{reasons}");
    }
    assert!(events(&ev).is_empty());
    let s = samples(&wav);
    assert_eq!(s.len(), 144_000);
    assert!(
        s.iter().all(|&x| x == 1.0),
        "a refused packet changed the output"
    );
}

/// The headline: a live run played with `oscsend`, recorded, then rendered again
/// offline from the recording, gives the same WAV sample for sample.
#[test]
fn a_live_oscsend_performance_replays_offline_bit_identically() {
    require_oscsend("replay");
    let dir = scratch("replay");
    let project = dir.join("p.toml");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/projects/hello.toml"),
        &project,
    )
    .unwrap();
    let (live_wav, ev, replay_wav) = (
        dir.join("live.wav"),
        dir.join("ev.jsonl"),
        dir.join("replay.wav"),
    );
    let live = Live::start(
        &project,
        &[
            "--seconds",
            "4",
            "--threads",
            "2",
            "--out",
            live_wav.to_str().unwrap(),
            "--record-events",
            ev.to_str().unwrap(),
        ],
    );
    live.oscsend("/node/lowpass/freq", "f", &["2500"]);
    std::thread::sleep(Duration::from_millis(200));
    live.oscsend("/node/lowpass/freq/exp", "ff", &["200", "0.6"]);
    std::thread::sleep(Duration::from_millis(150));
    // Interrupts the exponential ramp: starts from the value it reached.
    live.oscsend("/node/mix/pan/ramp", "ff", &["-0.8", "0.4"]);
    live.oscsend("/node/pluck/decay", "d", &["0.97"]);
    std::thread::sleep(Duration::from_millis(200));
    live.oscsend("/node/lowpass/freq/ramp", "ff", &["3000", "0.3"]);
    live.oscsend("/node/tone/amp/step", "i", &["0"]);
    let (summary, log) = live.finish();
    assert_eq!(summary["osc_applied"], 6, "{log:?}");
    assert_eq!(events(&ev).len(), 6);

    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("run")
        .arg(&project)
        .args(["--device", "offline", "--seconds", "4", "--replay"])
        .arg(&ev)
        .arg("--out")
        .arg(&replay_wav)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (a, b) = (samples(&live_wav), samples(&replay_wav));
    assert_eq!(a.len(), 2 * 192_000);
    support::assert_bit_identical(&a, &b, "the live recording against its replay");
    // The performance did something: the output differs from the untouched project.
    let plain = dir.join("plain.wav");
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("run")
        .arg(&project)
        .args(["--device", "offline", "--seconds", "4", "--out"])
        .arg(&plain)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_ne!(samples(&plain), a);
}

const SYNTH: &str = "block_size = 64\nedges = [\"s -> out\"]\n[nodes.s]\ntype = \"synth\"\n\
                     [nodes.out]\ntype = \"output\"\n";

/// Notes over OSC, sent with `oscsend`: each is recorded at the frame it took effect at, the
/// live output is the one a controller playing the same notes at those frames makes (so
/// every note sounds at its frame, at its pitch and velocity), the recording replays to the
/// same output, and bad arguments are refused, logged and counted.
#[test]
fn oscsend_plays_notes_on_a_named_node_at_their_frames() {
    assert!(
        Command::new("oscsend").output().is_ok(),
        "this test needs oscsend (Debian's liblo-tools)"
    );
    let dir = scratch("notes");
    std::fs::write(dir.join("p.toml"), SYNTH).unwrap();
    let (wav, ev) = (dir.join("live.wav"), dir.join("ev.jsonl"));
    let live = Live::start(
        &dir.join("p.toml"),
        &[
            "--seconds",
            "2",
            "--out",
            wav.to_str().unwrap(),
            "--record-events",
            ev.to_str().unwrap(),
        ],
    );
    live.oscsend("/node/s/note_on", "if", &["69", "1"]);
    std::thread::sleep(Duration::from_millis(150));
    live.oscsend("/node/s/note_off", "d", &["69"]);
    live.oscsend("/node/s/note_on", "hf", &["57", "0.5"]);
    // Refused: out of range, wrong types and counts, a node that plays no notes.
    live.oscsend("/node/s/note_on", "if", &["128", "0.8"]);
    live.oscsend("/node/s/note_on", "ii", &["60", "100"]);
    live.oscsend("/node/s/note_on", "sf", &["C4", "0.8"]);
    live.oscsend("/node/s/all_notes_off", "i", &["1"]);
    live.oscsend("/node/out/note_on", "if", &["60", "0.8"]);
    std::thread::sleep(Duration::from_millis(150));
    live.oscsend("/node/s/all_notes_off", "", &[]);
    let (summary, log) = live.finish();
    assert_eq!(summary["osc_applied"], 4, "{log:?}");
    assert_eq!(summary["osc_rejected"], 5, "{log:?}");
    let reasons = log.join("\n");
    for why in [
        "note 128 is outside 0 to 127",
        "velocity 100 is outside 0 to 1 (0 is a note off)",
        "argument 1 is a string",
        "1 argument(s) given; expected no argument",
        "node `out` does not play notes",
    ] {
        assert!(reasons.contains(why), "no `{why}` in the log:\n{reasons}");
    }

    let e = events(&ev);
    let kinds: Vec<_> = e.iter().map(|l| l["change"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["note_on", "note_off", "note_on", "all_notes_off"],
        "{e:?}"
    );
    assert!(e.iter().all(|l| l["node"] == "s"));
    assert_eq!(
        (e[0]["note"].as_f64(), e[2]["note"].as_f64()),
        (Some(69.0), Some(57.0))
    );
    let frame = |i: usize| e[i]["frame"].as_u64().unwrap();

    // The same notes from a controller, at the recorded frames.
    let project = downbeat::project::Project::parse(SYNTH, "p.toml").unwrap();
    let mut engine = downbeat::Engine::new(project.build().unwrap());
    let mut c = engine.controller(16);
    use downbeat::control::When::Frame;
    c.note_on(Frame(frame(0)), 0, 69.0, 1.0).unwrap();
    c.note_off(Frame(frame(1)), 0, 69.0).unwrap();
    c.note_on(Frame(frame(2)), 0, 57.0, 0.5).unwrap();
    c.all_notes_off(Frame(frame(3)), None).unwrap();
    let render = |engine: &mut downbeat::Engine| {
        let mut out = vec![0.0f32; 2 * 96_000];
        for block in out.chunks_mut(2 * 64) {
            engine.process(block);
        }
        out
    };
    let want = render(&mut engine);
    let got = samples(&wav);
    assert_eq!(got.len(), want.len());
    let onset = got.iter().position(|&x| x != 0.0).unwrap() as u64 / 2;
    assert_eq!(onset, frame(0), "the first note sounds at its frame");
    let first = got
        .iter()
        .zip(&want)
        .position(|(x, y)| x.to_bits() != y.to_bits());
    assert_eq!(
        first, None,
        "the live notes differ from sample {first:?} on"
    );

    // The recording reads back into the same events.
    let mut replay = project.build().unwrap();
    let table = replay.param_table();
    let recorded = downbeat::control::record::read_events(&ev, &table).unwrap();
    replay.set_timeline(recorded).unwrap();
    let replayed = render(&mut downbeat::Engine::new(replay));
    assert!(got
        .iter()
        .zip(&replayed)
        .all(|(x, y)| x.to_bits() == y.to_bits()));
}

/// Noise through the CLAP host probe (`crates/clap-test-plugins`: a stereo gain with a
/// state, so memoryless), `extra` in the probe's table.
#[cfg(feature = "clap")]
fn probe_project(extra: &str) -> String {
    format!(
        "sample_rate = 48000\nblock_size = 256\nedges = [\"n -> p -> out\"]\n\
         [nodes.n]\ntype = \"noise\"\nseed = 7\n\
         [nodes.p]\ntype = \"clap\"\npath = \"{}\"\nid = \"{}\"\n{extra}\n\
         [nodes.out]\ntype = \"output\"\n",
        clap_support::test_plugins().display(),
        clap_support::HOST_PROBE_ID,
    )
}

/// Issue 29: a plugin's parameter changed twice over OSC during a live run, its state saved
/// when the run ends (`--save-state`), and a second run loading that state
/// (`state = "FILE"`) renders what the first rendered from the last change on, bit for bit
/// (the plugin is a gain: nothing before the change carries over). The recorded events say
/// at which frame that change landed.
#[cfg(feature = "clap")]
#[test]
fn a_state_saved_after_osc_changes_reloads_into_the_same_render() {
    require_oscsend("state");
    let dir = scratch("state");
    std::fs::write(dir.join("p.toml"), probe_project("")).unwrap();
    let (live_wav, ev, states) = (
        dir.join("live.wav"),
        dir.join("ev.jsonl"),
        dir.join("states"),
    );
    let live = Live::start(
        &dir.join("p.toml"),
        &[
            "--seconds",
            "2",
            "--out",
            live_wav.to_str().unwrap(),
            "--record-events",
            ev.to_str().unwrap(),
            "--save-state",
            states.to_str().unwrap(),
        ],
    );
    live.oscsend("/node/p/gain/step", "f", &["1.5"]);
    std::thread::sleep(Duration::from_millis(200));
    live.oscsend("/node/p/gain/step", "f", &["0.5"]);
    let (summary, log) = live.finish();
    assert_eq!(summary["osc_applied"], 2, "{log:?}");
    assert_eq!(summary["saved_states"]["nodes"], 1, "{summary}");
    let e = events(&ev);
    assert_eq!(e.len(), 2, "{e:?}");
    assert_eq!(e[1]["value"].as_f64(), Some(0.5));
    let last = e[1]["frame"].as_u64().unwrap() as usize;
    assert!(
        (1..96_000).contains(&last),
        "the last change at frame {last}"
    );

    std::fs::write(
        dir.join("again.toml"),
        probe_project("state = \"states/p.clapstate\""),
    )
    .unwrap();
    let again = dir.join("again.wav");
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("run")
        .arg(dir.join("again.toml"))
        .args(["--device", "offline", "--seconds", "2", "--out"])
        .arg(&again)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (a, b) = (samples(&live_wav), samples(&again));
    assert_eq!((a.len(), b.len()), (2 * 96_000, 2 * 96_000));
    assert!(a[2 * last..].iter().any(|&x| x != 0.0), "the plugin played");
    support::assert_bit_identical(
        &a[2 * last..],
        &b[2 * last..],
        "the live run after its last OSC change against the run from its saved state",
    );
    // Before that change the live run played other gains: the state is what made the rest
    // equal.
    assert_ne!(a[..2 * last], b[..2 * last]);
}

/// A CLAP plugin that restarts itself mid-run with a new latency and a new parameter (the
/// test plugins' reshaper: `go` makes it ask for a main-thread callback, which asks for the
/// restart): the run's CLAP main thread serves both while it plays, the graph is recompiled
/// for the new latency without rebuilding the node, and `oscsend` sets the new parameter
/// by name. The plugin's input is silence, so its output is its `offset` alone.
#[cfg(feature = "clap")]
#[test]
fn a_parameter_a_clap_plugin_gains_in_a_restart_is_set_by_oscsend() {
    require_oscsend("a_parameter_a_clap_plugin_gains");
    let dir = scratch("restart");
    std::fs::write(
        dir.join("p.toml"),
        format!(
            "sample_rate = 48000\nblock_size = 256\nedges = [\"shaper -> out\"]\n\
             [nodes.shaper]\ntype = \"clap\"\npath = \"{}\"\nid = \"{}\"\n\
             [nodes.out]\ntype = \"output\"\nchannels = 2\n",
            clap_support::test_plugins().display(),
            clap_support::RESHAPER_ID,
        ),
    )
    .unwrap();
    let wav = dir.join("live.wav");
    let live = Live::start(
        &dir.join("p.toml"),
        &["--seconds", "3", "--out", wav.to_str().unwrap()],
    );
    live.oscsend("/node/shaper/go/step", "f", &["1"]);
    // The restart and the recompile take milliseconds; the slack is for a loaded machine.
    std::thread::sleep(Duration::from_millis(800));
    live.oscsend("/node/shaper/offset/step", "f", &["0.25"]);
    let (summary, log) = live.finish();
    assert_eq!(summary["osc_applied"], 2, "{log:?}");
    assert_eq!(summary["osc_rejected"], 0, "{log:?}");
    assert!(
        log.iter()
            .any(|l| l.contains("the graph is recompiled to follow")),
        "{log:?}"
    );
    let s = samples(&wav);
    assert!(s[..256].iter().all(|&x| x == 0.0), "silence before");
    assert!(
        s[s.len() - 4800..].iter().all(|&x| x == 0.25),
        "the offset at the end: {:?}",
        &s[s.len() - 4..]
    );
}
