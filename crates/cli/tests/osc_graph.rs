//! `downbeat run --osc` editing the running graph: `/graph/add`, `/graph/connect` and the
//! rest sent with liblo's `oscsend` (Debian's `liblo-tools`), bundles of them with `rosc`
//! (`oscsend` cannot send bundles). Without `oscsend` these tests fail: a missing client
//! must never pass as a skipped test.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use rosc::{OscBundle, OscMessage, OscPacket, OscType};

fn require_oscsend(test: &str) {
    if let Err(e) = Command::new("oscsend").output() {
        panic!("{test}: oscsend cannot be run ({e}); install liblo-tools (scripts/deps.sh does)");
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("downbeat-osc-graph-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A mono mix `m` into the output, with `extra` nodes and edges (TOML) besides. Blocks of
/// 16 frames: an edit applied message by message would show between two of them.
fn project(edges: &str, extra: &str) -> String {
    format!(
        "block_size = 16\nedges = [\"m -> out\"{edges}]\n\
         [nodes.m]\ntype = \"mix\"\nchannels = 1\n\
         [nodes.out]\ntype = \"output\"\nchannels = 1\n{extra}"
    )
}

/// A `downbeat run --osc` on a free port.
struct Live {
    child: Child,
    addr: SocketAddr,
    stderr: mpsc::Receiver<String>,
}

impl Live {
    fn start(project: &Path, wav: &Path, seconds: &str) -> Live {
        let mut child = Command::new(env!("CARGO_BIN_EXE_downbeat"))
            .arg("run")
            .arg(project)
            .args([
                "--osc",
                "127.0.0.1:0",
                "--json",
                "--seconds",
                seconds,
                "--out",
            ])
            .arg(wav)
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

    fn send(&self, packet: &OscPacket) {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .send_to(&rosc::encoder::encode(packet).unwrap(), self.addr)
            .unwrap();
    }

    /// Waits for the run to end: the summary and the stderr lines after the first.
    fn finish(self) -> (serde_json::Value, Vec<String>) {
        let out = self.child.wait_with_output().unwrap();
        let log: Vec<String> = self.stderr.iter().collect();
        assert!(out.status.success(), "exit {:?}: {log:?}", out.status);
        (serde_json::from_slice(&out.stdout).unwrap(), log)
    }
}

fn samples(path: &Path) -> Vec<f32> {
    hound::WavReader::open(path)
        .unwrap()
        .samples::<f32>()
        .map(Result::unwrap)
        .collect()
}

fn message(addr: &str, args: Vec<OscType>) -> OscPacket {
    OscPacket::Message(OscMessage {
        addr: addr.into(),
        args,
    })
}

fn s(text: &str) -> OscType {
    OscType::String(text.into())
}

/// "Immediately": the timetag does not delay edits anyway.
fn bundle(messages: Vec<OscPacket>) -> OscPacket {
    OscPacket::Bundle(OscBundle {
        timetag: downbeat::control::osc::timetag(SystemTime::now()),
        content: messages,
    })
}

/// The runs of equal samples in `s`, as (value, length), the values rounded to 1e-6 (a
/// sine at 0 Hz a quarter turn in is its amplitude to within that).
fn runs(s: &[f32]) -> Vec<(f32, usize)> {
    let mut out: Vec<(f32, usize)> = Vec::new();
    for &x in s {
        let x = (x * 1e6).round() / 1e6;
        match out.last_mut() {
            Some((v, n)) if *v == x => *n += 1,
            _ => out.push((x, 1)),
        }
    }
    out
}

/// A sine added with `oscsend` is silent until connected into the mix, then heard, and
/// played with `/node/...` like any node the project had; bad edits are refused, counted
/// and logged, and change nothing.
#[test]
fn oscsend_adds_a_node_that_is_heard_once_connected() {
    require_oscsend("oscsend_adds_a_node");
    let dir = scratch("add");
    std::fs::write(dir.join("p.toml"), project("", "")).unwrap();
    let wav = dir.join("live.wav");
    let live = Live::start(&dir.join("p.toml"), &wav, "3");
    std::thread::sleep(Duration::from_millis(300));
    // A constant 0.5: a sine at 0 Hz a quarter turn in. Every kind of value: floats, an int.
    live.oscsend(
        "/graph/add",
        "sssfsfsfsi",
        &[
            "tone", "sine", "freq", "0", "phase", "0.25", "amp", "0.5", "channels", "1",
        ],
    );
    // Refused, each changing nothing.
    live.oscsend("/graph/add", "ss", &["bad", "nosuchtype"]);
    live.oscsend("/graph/add", "sssf", &["bad", "sine", "bogus", "1"]);
    live.oscsend("/graph/add", "sssf", &["bad", "sine", "freq", "-5"]);
    live.oscsend("/graph/add", "ss", &["tone", "noise"]);
    live.oscsend("/graph/connect", "ss", &["tone", "nosuch"]);
    live.oscsend("/graph/connect", "ss", &["m", "tone"]);
    live.oscsend("/graph/add", "si", &["bad", "1"]);
    std::thread::sleep(Duration::from_millis(300));
    live.oscsend("/graph/connect", "ss", &["tone", "m"]);
    std::thread::sleep(Duration::from_millis(500));
    // The new node's parameters are addressable: the handler took the new table.
    live.oscsend("/node/tone/amp/step", "f", &["0.25"]);
    let (summary, log) = live.finish();
    let reasons = log.join("\n");
    assert_eq!(summary["osc_applied"], 3, "{reasons}");
    assert_eq!(summary["osc_rejected"], 7, "{reasons}");
    for why in [
        "`/graph/add`: unknown node type \"nosuchtype\"; valid types are `output`",
        "`/graph/add`: node `bad`: unknown parameter `bogus`",
        "`/graph/add`: node `bad`: parameter `freq`",
        "`/graph/add`: the graph already has a node `tone`",
        "`/graph/connect`: the graph has no node `nosuch`",
        "edge `m` -> `tone`: `tone` is a source and takes no input",
        "`/graph/add`: argument 2 is a number; expected the node type as a string",
    ] {
        assert!(reasons.contains(why), "no `{why}` in the log:\n{reasons}");
    }

    // Silence until the connect, then the tone, then the tone at the amplitude set over
    // OSC: nothing else (a refused edit that got through would show).
    let s = samples(&wav);
    assert_eq!(s.len(), 3 * 48_000);
    let r = runs(&s);
    assert_eq!(
        r.iter().map(|&(v, _)| v).collect::<Vec<_>>(),
        [0.0, 0.5, 0.25],
        "{r:?}"
    );
    // The connect came 0.6 s in, after the add and the refusals.
    assert!(r[0].1 > 48_000 / 2, "heard {} frames in", r[0].1);
    assert_eq!(r[0].1 % 16, 0, "an edit lands on a block boundary");
}

/// A bundle of `/graph` messages is one edit: the new source replaces the old at one block
/// boundary (never both, never neither); a bundle with one refused message applies none
/// of it, and one mixing `/graph` and `/node` messages is refused.
#[test]
fn a_bundle_of_graph_edits_applies_whole_or_not_at_all() {
    require_oscsend("a_bundle_of_graph_edits");
    let dir = scratch("bundle");
    std::fs::write(
        dir.join("p.toml"),
        project(
            ", \"a -> m\"",
            "[nodes.a]\ntype = \"sine\"\nfreq = 0\nphase = 0.25\namp = 0.5\nchannels = 1\n",
        ),
    )
    .unwrap();
    let wav = dir.join("live.wav");
    let live = Live::start(&dir.join("p.toml"), &wav, "2");
    let constant = |name: &str, amp: f32| {
        message(
            "/graph/add",
            vec![
                s(name),
                s("sine"),
                s("freq"),
                OscType::Float(0.0),
                s("phase"),
                OscType::Float(0.25),
                s("amp"),
                OscType::Float(amp),
                s("channels"),
                OscType::Int(1),
            ],
        )
    };
    std::thread::sleep(Duration::from_millis(300));
    // Its last message is refused: the loud node is neither added nor connected.
    live.send(&bundle(vec![
        constant("loud", 4.0),
        message("/graph/connect", vec![s("loud"), s("m")]),
        message("/graph/connect", vec![s("loud"), s("nosuch")]),
    ]));
    live.send(&bundle(vec![
        constant("loud", 4.0),
        message("/graph/connect", vec![s("loud"), s("m")]),
        message("/node/a/amp", vec![OscType::Float(0.1)]),
    ]));
    std::thread::sleep(Duration::from_millis(300));
    // Replaces `a` by `b` in one edit; `loud` is free to be added now.
    live.send(&bundle(vec![
        constant("b", 0.25),
        message("/graph/connect", vec![s("b"), s("m")]),
        message("/graph/disconnect", vec![s("a"), s("m")]),
        constant("loud", 4.0),
    ]));
    let (summary, log) = live.finish();
    let reasons = log.join("\n");
    assert_eq!(summary["osc_applied"], 4, "{reasons}");
    assert_eq!(summary["osc_rejected"], 2, "{reasons}");
    assert!(
        reasons.contains("`/graph/connect`: the graph has no node `nosuch`"),
        "{reasons}"
    );
    assert!(
        reasons.contains("a bundle holds /graph and /node messages"),
        "{reasons}"
    );
    let r = runs(&samples(&wav));
    assert_eq!(
        r.iter().map(|&(v, _)| v).collect::<Vec<_>>(),
        [0.5, 0.25],
        "{r:?}"
    );
    assert_eq!(r[0].1 % 16, 0, "an edit lands on a block boundary");
}
