//! The JACK device against a real `jackd -d dummy` server (run by `crates/cli/ci.sh`
//! with `--features jack`; each test starts its own named server).
#![cfg(feature = "jack")]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::jack_server::{output_within, Server, Spawned, APPEAR_LIMIT, RUN_LIMIT};
use support::{read_wav, repo};

fn tmp(name: &str) -> PathBuf {
    support::tmp("jack", name)
}

/// Frames and peak of a WAV file.
fn peak(path: &Path) -> (usize, f32) {
    let (samples, channels) = read_wav(path);
    let p = samples.iter().fold(0.0f32, |m, s| m.max(s.abs()));
    (samples.len() / channels, p)
}

const HELLO: &str = "examples/projects/hello.toml";

/// `downbeat run` of [`HELLO`] on `server` for `seconds`, recorded to `wav`, with `extra`
/// arguments.
fn render_hello(server: &Server, seconds: u32, wav: &Path, extra: &[&str]) -> Output {
    let seconds = seconds.to_string();
    let mut args = vec![
        "run",
        HELLO,
        "--device",
        "jack",
        "--seconds",
        &seconds,
        "--out",
        wav.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    output_within(&mut server.downbeat(&args), RUN_LIMIT)
}

#[test]
fn renders_three_seconds_through_jack() {
    let server = Server::start("render");
    let wav = tmp("render.wav");
    let out = render_hello(&server, 3, &wav, &["--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["device"], "jack");
    assert!(json.get("xruns").is_some());
    let (frames, p) = peak(&wav);
    assert_eq!(frames, 3 * 48_000);
    assert!(p > 0.05, "silent recording (peak {p})");
}

/// A server at 44.1 kHz and a project at 48 kHz: the project is rebuilt at the server's rate,
/// with a note, and plays its seconds at that rate (the guide, "Devices": "follows the server's ... sample
/// rate").
#[test]
fn a_server_at_another_rate_gets_the_project_rebuilt_at_its_rate() {
    let server = Server::start_at("rate", 44_100);
    let wav = tmp("rate.wav");
    let out = render_hello(&server, 2, &wav, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "following the jack device's sample rate, 44100 Hz (the project asks for 48000 Hz)"
        ),
        "{err}"
    );
    let spec = hound::WavReader::open(&wav).unwrap().spec();
    assert_eq!(spec.sample_rate, 44_100);
    let (frames, p) = peak(&wav);
    assert_eq!(frames, 2 * 44_100);
    assert!(p > 0.05, "silent recording (peak {p})");
}

#[test]
fn another_client_receives_the_audio() {
    let server = Server::start("rec");
    let mut run = Spawned::start(
        server
            .downbeat(&["run", HELLO, "--device", "jack", "--seconds", "5"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    server.wait_for_port("downbeat:out_2", &mut run);
    let rec = tmp("jack_rec.wav");
    let recorded = output_within(
        Command::new("jack_rec")
            .env("JACK_DEFAULT_SERVER", &server.name)
            .args([
                "-f",
                rec.to_str().unwrap(),
                "-d",
                "1",
                "-b",
                "32",
                "downbeat:out_1",
                "downbeat:out_2",
            ]),
        RUN_LIMIT,
    );
    assert!(
        recorded.status.success(),
        "jack_rec failed: {}",
        String::from_utf8_lossy(&recorded.stderr)
    );
    let out = run.output(RUN_LIMIT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (frames, p) = peak(&rec);
    assert!(frames >= 40_000, "jack_rec recorded {frames} frames");
    assert!(p > 0.05, "jack_rec heard silence (peak {p})");
}

#[test]
fn server_dying_mid_run_ends_cleanly_with_a_valid_recording() {
    let mut server = Server::start("kill");
    let wav = tmp("killed.wav");
    let mut child = Spawned::start(
        server
            .downbeat(&[
                "run",
                HELLO,
                "--device",
                "jack",
                "--seconds",
                "30",
                "--out",
                wav.to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    server.wait_for_port("downbeat:out_1", &mut child);
    std::thread::sleep(Duration::from_millis(1500));
    server.stop();
    let out = child.finish(Duration::from_secs(10)).unwrap_or_else(|out| {
        panic!(
            "downbeat hung after the server died: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("JACK server stopped"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let (frames, p) = peak(&wav);
    assert!(
        frames > 24_000 && frames < 30 * 48_000,
        "{frames} frames recorded"
    );
    assert!(p > 0.05);
}

#[test]
fn no_server_and_bad_connections_get_clear_messages() {
    // Started first for its turn (ONE_AT_A_TIME): the run without a server opens a client too.
    let server = Server::start("connect");
    let out = output_within(
        Command::new(env!("CARGO_BIN_EXE_downbeat"))
            .args(["run", HELLO, "--device", "jack", "--seconds", "1"])
            .current_dir(repo())
            .env(
                "JACK_DEFAULT_SERVER",
                format!("no-such-server-{}", std::process::id()),
            ),
        RUN_LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("jackd -d dummy"),
        "message should say how to start a server: {err}"
    );

    let out = output_within(
        &mut server.downbeat(&[
            "run",
            HELLO,
            "--device",
            "jack",
            "--seconds",
            "1",
            "--connect",
            "nowhere:in",
        ]),
        RUN_LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nowhere:in"), "{err}");
}

/// A server that never answers (stopped with SIGSTOP once it runs) fails the start with an
/// error within seconds: libjack waits for the server's answers without a timeout, and a run
/// once slept in such a wait for good (issue 42).
#[test]
fn a_server_that_never_answers_fails_the_start_within_seconds() {
    let server = Server::start("stopped");
    assert!(server.signal("-STOP"), "cannot stop jackd {}", server.name);
    let t = Instant::now();
    let out = output_within(
        &mut server.downbeat(&["run", HELLO, "--device", "jack", "--seconds", "1"]),
        RUN_LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("JACK did not answer within 10 s while opening the client `downbeat`"),
        "{err}"
    );
    // Ten seconds of waiting for the server, and the rest of the start and exit.
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "the start took {:?} to fail",
        t.elapsed()
    );
}

/// A run registers one JACK client, the one that plays; the server's sample rate, which the
/// project is built at, comes from it too. A probe client opened and closed just before it
/// deadlocked the run when another client came or went during the probe's close (issue 42).
/// `jack_evmon`, a client we did not write, reports every client that registers.
#[test]
fn a_run_registers_a_single_jack_client() {
    let server = Server::start("clients");
    let log = tmp("evmon.txt");
    let _evmon = Spawned::start(
        // Line-buffered: each event is in the file as soon as jack_evmon prints it.
        Command::new("stdbuf")
            .args(["-oL", "jack_evmon"])
            .env("JACK_DEFAULT_SERVER", &server.name)
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::null()),
    );
    let events = || std::fs::read_to_string(&log).unwrap_or_default();
    // jack_evmon reports clients once it is active: the jack_lsp clients of this loop.
    let t = Instant::now();
    while !events().contains("Client lsp registered") {
        assert!(
            t.elapsed() < APPEAR_LIMIT,
            "jack_evmon reported no jack_lsp within {} s: {}",
            APPEAR_LIMIT.as_secs(),
            events()
        );
        let _ = server.lsp();
    }
    let out = output_within(
        &mut server.downbeat(&["run", HELLO, "--device", "jack", "--seconds", "0.5"]),
        RUN_LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The server tells jack_evmon of the close right after downbeat closed its client.
    let t = Instant::now();
    while !events().contains("Client downbeat unregistered") {
        assert!(
            t.elapsed() < APPEAR_LIMIT,
            "jack_evmon reported no close of downbeat within {} s: {}",
            APPEAR_LIMIT.as_secs(),
            events()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let ours: Vec<String> = events()
        .lines()
        .filter(|l| l.starts_with("Client downbeat"))
        .map(String::from)
        .collect();
    assert_eq!(
        ours,
        ["Client downbeat registered", "Client downbeat unregistered"],
        "every event: {}",
        events()
    );
}

fn read(path: &Path) -> Vec<f32> {
    let mut r = hound::WavReader::open(path).unwrap();
    assert_eq!(r.spec().sample_format, hound::SampleFormat::Float);
    r.samples::<f32>().map(Result::unwrap).collect()
}

#[test]
fn metronome_clicks_come_in_through_the_input_node_at_a_constant_offset() {
    let server = Server::start("metro");
    let mut metro = Spawned::start(
        Command::new("jack_metro")
            .args(["-b", "240", "-f", "1000", "-D", "20", "-n", "metro"])
            .env("JACK_DEFAULT_SERVER", &server.name)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    server.wait_for_port("metro:240_bpm", &mut metro);
    let project = tmp("mono-through.toml");
    std::fs::write(
        &project,
        "edges = [\"mic -> g -> out\"]\n[nodes.mic]\ntype = \"input\"\nchannels = 1\n\
         [nodes.g]\ntype = \"gain\"\nchannels = 1\ngain = 0.5\n\
         [nodes.out]\ntype = \"output\"\nchannels = 1\n",
    )
    .unwrap();
    let (out_wav, in_wav) = (tmp("metro-out.wav"), tmp("metro-in.wav"));
    let out = output_within(
        &mut server.downbeat(&[
            "run",
            project.to_str().unwrap(),
            "--device",
            "jack",
            "--seconds",
            "3",
            "--connect-in",
            "metro:",
            "--out",
            out_wav.to_str().unwrap(),
            "--record-input",
            in_wav.to_str().unwrap(),
        ]),
        RUN_LIMIT,
    );
    drop(metro);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (played, heard) = (read(&out_wav), read(&in_wav));
    assert_eq!(played.len(), 3 * 48_000);
    // Same cycle, same frames: the output is the input halved, sample for sample.
    let halved: Vec<f32> = heard.iter().map(|i| 0.5 * i).collect();
    support::assert_bit_identical(&played, &halved, "the output against the input halved");
    // The clicks: onsets (a loud sample after 5 ms of quiet) exactly one beat apart.
    let mut onsets = Vec::new();
    let mut quiet = 0;
    for (i, s) in played.iter().enumerate() {
        if s.abs() > 0.01 {
            if quiet >= 240 {
                onsets.push(i);
            }
            quiet = 0;
        } else {
            quiet += 1;
        }
    }
    // The input is connected once the client is active, some cycles into the run: until then
    // the recording is silence, and when jack_metro is mid-click at that moment, the rest of
    // that click comes in at a cycle boundary as a sound of its own, off the beat (seen on a
    // loaded machine: silence, then 0.44 at frame 1024). The beat is measured from the second
    // sound on.
    let onsets = &onsets[1.min(onsets.len())..];
    assert!(
        onsets.len() >= 8,
        "{} clicks in 3 s at 240 bpm",
        onsets.len()
    );
    // Exactly one beat apart, except where the server reported an xrun: a cycle our client
    // was not run in is missing from the recording (reported, not silent), which makes one
    // interval a whole number of 256-frame periods short (seen once, in a `CI=true ./test`
    // run that shared the machine with a build).
    let summary = String::from_utf8_lossy(&out.stdout);
    let xruns: usize = summary
        .split("JACK xruns ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no xrun count in the summary: {summary}"));
    let beat = 48_000 * 60 / 240;
    let mut short = 0;
    for pair in onsets.windows(2) {
        let gap = pair[1] - pair[0];
        if gap != beat {
            assert!(
                gap < beat && (beat - gap) % 256 == 0,
                "clicks at {onsets:?}: {gap} frames apart is not one beat less whole periods"
            );
            short += 1;
        }
    }
    assert!(
        short <= xruns,
        "clicks at {onsets:?}: {short} interval(s) off the beat with {xruns} xrun(s) reported"
    );
}

#[test]
fn server_dying_with_fallback_virtual_completes_with_no_lost_block() {
    let mut server = Server::start("fallback");
    let (wav, offline) = (tmp("fallback.wav"), tmp("fallback-offline.wav"));
    let mut child = Spawned::start(
        server
            .downbeat(&[
                "run",
                HELLO,
                "--device",
                "jack",
                "--seconds",
                "5",
                "--fallback",
                "virtual",
                "--out",
                wav.to_str().unwrap(),
                "--json",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    server.wait_for_port("downbeat:out_1", &mut child);
    std::thread::sleep(Duration::from_millis(1500));
    server.stop();
    let out = child.output(RUN_LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("virtual device"), "{err}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["fallback"], "virtual");
    let done = output_within(
        Command::new(env!("CARGO_BIN_EXE_downbeat"))
            .args([
                "run",
                HELLO,
                "--device",
                "offline",
                "--seconds",
                "5",
                "--out",
            ])
            .arg(&offline)
            .current_dir(repo()),
        RUN_LIMIT,
    );
    assert!(done.status.success());
    let (got, want) = (read(&wav), read(&offline));
    assert_eq!(got.len(), 2 * 5 * 48_000);
    assert!(
        got == want,
        "the run differs from the offline render: a block was lost or repeated"
    );
}

#[test]
fn latency_through_a_loop_inside_the_server() {
    let server = Server::start("latency");
    let out = output_within(
        &mut server.downbeat(&[
            "latency",
            "--device",
            "jack",
            "--connect-in",
            "downbeat:out_1",
            "--seconds",
            "2",
            "--json",
        ]),
        RUN_LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["found"].as_u64().unwrap() >= 3, "{json}");
    // Our own output into our own input comes back one cycle later, always the same.
    assert_eq!(json["measured_frames"], 256, "{json}");
    assert_eq!(json["spread_frames"], 0, "{json}");
}

/// A sine synth alone, so that onsets and pitches can be read off the recording.
const SYNTH: &str = r#"
sample_rate = 48000
block_size = 256
edges = ["keys -> out"]
[nodes.keys]
type = "synth"
wave = "sine"
attack = 0.001
release = 0.01
amp = 0.5
[nodes.out]
type = "output"
"#;

/// Frames of the first sample at or above `level` in each stretch of sound that follows at
/// least `gap` frames of near-silence.
fn onsets(x: &[f32], level: f32, gap: usize) -> Vec<usize> {
    let mut found = Vec::new();
    let mut quiet = gap;
    for (i, &s) in x.iter().enumerate() {
        if s.abs() >= level {
            if quiet >= gap {
                found.push(i);
            }
            quiet = 0;
        } else {
            quiet += 1;
        }
    }
    found
}

/// Frequency of `x` from its upward zero crossings.
fn frequency(x: &[f32]) -> f64 {
    let ups: Vec<usize> = (1..x.len())
        .filter(|&i| x[i - 1] < 0.0 && x[i] >= 0.0)
        .collect();
    let (first, last) = (ups[0], ups[ups.len() - 1]);
    48_000.0 * (ups.len() - 1) as f64 / (last - first) as f64
}

/// `jack_midiseq` (jackd2's example sequencer, a client we did not write) loops a bar of
/// 30011 frames: A4 from frame 0 for 6000 frames, E5 from frame 10007 for 6000. Through
/// `--midi-in` each note starts at the frame JACK stamped it with: consecutive onsets in the
/// recording are 10007 and 20004 frames apart within 8 frames (the first sample over the
/// threshold comes a frame or two into the 1 ms attack, earlier for the higher note; a note
/// placed at the start of its 256-frame cycle is tens of frames off), at the note's pitch.
#[test]
fn midi_in_notes_from_jack_midiseq_start_at_their_frames_at_their_pitch() {
    let server = Server::start("midi");
    let project = tmp("synth.toml");
    std::fs::write(&project, SYNTH).unwrap();
    let mut seq = Spawned::start(
        Command::new("jack_midiseq")
            .args(["seq", "30011", "0", "69", "6000", "10007", "76", "6000"])
            .env("JACK_DEFAULT_SERVER", &server.name)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    server.wait_for_port("seq:out", &mut seq);
    let wav = tmp("midi.wav");
    let out = output_within(
        &mut server.downbeat(&[
            "run",
            project.to_str().unwrap(),
            "--device",
            "jack",
            "--midi-in",
            "seq:",
            "--seconds",
            "2",
            "--out",
            wav.to_str().unwrap(),
        ]),
        RUN_LIMIT,
    );
    seq.stop("-TERM");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let (all, channels) = read_wav(&wav);
    let x: Vec<f32> = all.into_iter().step_by(channels).collect();
    // Onsets late enough to be whole in the recording, with room to measure their pitch.
    let found: Vec<usize> = onsets(&x, 1e-3, 2000)
        .into_iter()
        .filter(|&at| at + 6_000 <= x.len())
        .collect();
    assert!(found.len() >= 5, "onsets {found:?}");
    // After the first (whose note may have begun before the run), notes alternate A4, E5.
    for pair in found[1..].windows(2) {
        let gap = pair[1] - pair[0];
        let pitch = if x_is_a4(&x, pair[0]) { 10_007 } else { 20_004 };
        assert!(
            gap.abs_diff(pitch) <= 8,
            "onsets {found:?}: {gap} frames between notes, expected {pitch} (within 8)"
        );
    }
    for &at in &found[1..] {
        let f = frequency(&x[at + 480..at + 5_280]);
        let want = if x_is_a4(&x, at) { 440.0 } else { 659.255 };
        assert!(
            (f / want - 1.0).abs() < 0.005,
            "note at {at}: {f:.2} Hz, expected {want} Hz"
        );
    }
}

/// Whether the note starting at `at` is the A4 (else the E5): nearer to 440 than to 659 Hz.
fn x_is_a4(x: &[f32], at: usize) -> bool {
    frequency(&x[at + 480..at + 5_280]) < 550.0
}

#[test]
fn midi_in_without_an_instrument_or_a_port_is_refused() {
    let server = Server::start("midi-bad");
    let sine = tmp("sine.toml");
    std::fs::write(
        &sine,
        "edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
    )
    .unwrap();
    let out = output_within(
        &mut server.downbeat(&[
            "run",
            sine.to_str().unwrap(),
            "--device",
            "jack",
            "--midi-in",
            "seq:",
            "--seconds",
            "0.5",
        ]),
        RUN_LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no node of the project plays notes"), "{err}");

    let project = tmp("synth-bad.toml");
    std::fs::write(&project, SYNTH).unwrap();
    let out = output_within(
        &mut server.downbeat(&[
            "run",
            project.to_str().unwrap(),
            "--device",
            "jack",
            "--midi-in",
            "nowhere:",
            "--seconds",
            "0.5",
        ]),
        RUN_LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no JACK midi output port starts with `nowhere:`"),
        "{err}"
    );
}
