//! `downbeat run --device jack --transport jack|jack-master` against a real `jackd -d dummy`
//! (run by `crates/cli/ci.sh` with `--features jack`; each test starts its own named server).
//!
//! JACK's transport is moved by `jack_transport` (jackd2's own transport client, which takes
//! `play`, `stop` and `locate FRAME` on its stdin), and read by a probe of the test's own (a
//! JACK client made here with the `jack` crate) that records, cycle by cycle, JACK's
//! transport as the cycle reports it and what `downbeat`'s output port played in that cycle:
//! the probe's input is connected from `downbeat:out_1`, so JACK runs `downbeat` first in
//! every cycle and the probe hears that cycle's frames. The checks are exact, cycle by
//! cycle; only a cycle in which a client ran late (an xrun, which the server reports to the
//! probe) may show another cycle's output, and each check says how many it allows for the
//! xruns counted. Without `jackd` or `jack_transport` the tests fail naming the package
//! (`jackd2`): a missing server never passes as skipped.
#![cfg(feature = "jack")]

mod support;

use std::io::Write;
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use downbeat_graph::time::{Signature, SignatureChange, TempoMap, TempoPoint};
use jack::{AudioIn, Client, ClientOptions, Control, ProcessScope, TransportBBT, TransportState};
use support::jack_server::{Server, Spawned, RUN_LIMIT};

/// How long one step of a test may wait for JACK (and `downbeat` through it) to show what
/// the step did: ample on a machine busy with other builds. Each wait says what it waited
/// for when it gives up.
const STEP_LIMIT: Duration = Duration::from_secs(30);

/// The sample rate of the test servers ([`Server::start`]).
const RATE: u64 = 48_000;

fn tmp(name: &str) -> PathBuf {
    support::tmp("jack-transport", name)
}

/// One process cycle as the probe saw it.
#[derive(Clone, Debug)]
struct Cycle {
    /// Whether JACK's transport rolled in this cycle.
    rolling: bool,
    /// JACK's transport frame at the cycle's first frame.
    frame: u64,
    /// The bar/beat/tick a timebase master gave for this cycle, if any.
    bbt: Option<TransportBBT>,
    /// What the probe's input (`downbeat:out_1`) carried in this cycle.
    samples: Vec<f32>,
}

/// A JACK client of the test's own, `probe`, with an input port `probe:in`: records every
/// cycle ([`Cycle`]) until dropped.
struct Probe {
    client: Option<jack::AsyncClient<Xruns, jack::contrib::ClosureProcessHandler<(), Callback>>>,
    cycles: mpsc::Receiver<Cycle>,
    seen: Vec<Cycle>,
    xruns: Arc<AtomicUsize>,
}

/// Counts the xruns the server tells the probe of: a cycle in which a client (`downbeat`
/// or the probe) ran late.
struct Xruns(Arc<AtomicUsize>);

impl jack::NotificationHandler for Xruns {
    fn xrun(&mut self, _: &Client) -> Control {
        self.0.fetch_add(1, Ordering::Relaxed);
        Control::Continue
    }
}

type Callback = Box<dyn FnMut(&Client, &ProcessScope) -> Control + Send>;

impl Probe {
    /// Opens the probe on `server`, its input connected from `from` when given.
    fn start(server: &Server, from: Option<&str>) -> Probe {
        // libjack reads the server's name from the environment when the client opens. The
        // tests of this file run one at a time (the server holds the turn), and std's own
        // reads of the environment (spawning a process) are ordered with this write.
        std::env::set_var("JACK_DEFAULT_SERVER", &server.name);
        let (client, _) = Client::new("probe", ClientOptions::NO_START_SERVER)
            .unwrap_or_else(|e| panic!("the probe cannot open on jackd {}: {e}", server.name));
        let input = client
            .register_port("in", AudioIn::default())
            .expect("the probe registers its input");
        let transport = client.transport();
        let (tx, cycles) = mpsc::channel();
        // The test's own client: it may allocate (a dummy server has no deadline to miss
        // that matters here; a late cycle is an xrun, which costs the recording nothing).
        let callback: Callback = Box::new(move |_, ps| {
            let Ok(now) = transport.query() else {
                return Control::Continue;
            };
            let _ = tx.send(Cycle {
                rolling: now.state == TransportState::Rolling,
                frame: u64::from(now.pos.frame()),
                bbt: now.pos.bbt(),
                samples: input.as_slice(ps).to_vec(),
            });
            Control::Continue
        });
        let xruns = Arc::new(AtomicUsize::new(0));
        let client = client
            .activate_async(
                Xruns(Arc::clone(&xruns)),
                jack::contrib::ClosureProcessHandler::new(callback),
            )
            .expect("the probe activates");
        if let Some(port) = from {
            client
                .as_client()
                .connect_ports_by_name(port, "probe:in")
                .unwrap_or_else(|e| panic!("cannot connect {port} to probe:in: {e}"));
        }
        Probe {
            client: Some(client),
            cycles,
            seen: Vec::new(),
            xruns,
        }
    }

    /// Takes what the probe recorded since the last look.
    fn poll(&mut self) {
        self.seen.extend(self.cycles.try_iter());
    }

    /// Waits until `done` holds for the cycles recorded since cycle `from`, at most
    /// [`STEP_LIMIT`]; `what` says what it waited for. Returns the index of the cycle at
    /// which it held.
    fn wait(&mut self, from: usize, what: &str, done: impl Fn(&[Cycle]) -> bool) -> usize {
        let t = Instant::now();
        loop {
            self.poll();
            let since = &self.seen[from.min(self.seen.len())..];
            if done(since) {
                return self.seen.len();
            }
            assert!(
                t.elapsed() < STEP_LIMIT,
                "waited {} s for {what}; the last cycles: {:?}",
                STEP_LIMIT.as_secs(),
                since
                    .iter()
                    .rev()
                    .take(3)
                    .map(|c| (c.rolling, c.frame, c.bbt.map(|b| (b.bar, b.beat, b.tick))))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        // libjack's close can hang when another client comes or goes at that moment (issue
        // 42): closed on a thread of its own, and left there after five seconds.
        if let Some(client) = self.client.take() {
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                drop(client);
                let _ = tx.send(());
            });
            let _ = rx.recv_timeout(Duration::from_secs(5));
        }
    }
}

/// `jack_transport` on `server`, taking commands on its stdin.
struct TransportClient {
    stdin: ChildStdin,
    _process: Spawned,
}

impl TransportClient {
    fn start(server: &Server) -> TransportClient {
        let found = std::env::var_os("PATH").is_some_and(|path| {
            std::env::split_paths(&path).any(|dir| dir.join("jack_transport").is_file())
        });
        assert!(
            found,
            "jack_transport is not on the PATH; install jackd2 (scripts/deps.sh does)"
        );
        let mut process = Spawned::start(
            Command::new("jack_transport")
                .env("JACK_DEFAULT_SERVER", &server.name)
                .env("JACK_NO_AUDIO_RESERVATION", "1")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        let stdin = process
            .child
            .stdin
            .take()
            .expect("a pipe to jack_transport");
        TransportClient {
            stdin,
            _process: process,
        }
    }

    /// Sends one command (`play`, `stop`, `locate 96000`).
    fn send(&mut self, command: &str) {
        writeln!(self.stdin, "{command}")
            .and_then(|()| self.stdin.flush())
            .unwrap_or_else(|e| panic!("jack_transport did not take `{command}`: {e}"));
    }
}

/// Frames of a beat at 120 bpm.
const BEAT: u64 = RATE / 2;

/// A metronome at 120 bpm in 4/4, alone: a click of 0.5 on every bar line and 0.3 on the
/// other beats, each starting at full level on its beat's frame and over in 150 ms.
const METRONOME: &str = r#"
sample_rate = 48000
block_size = 256
edges = ["click -> out"]
[tempo]
bpm = 120
[nodes.click]
type = "metronome"
gain = 0.5
[nodes.out]
type = "output"
"#;

/// Where clicks start in `cycles`: (cycle, offset) of each loud sample (0.25 and up) that
/// follows at least 240 quiet ones (below 0.01) in the recording.
fn onsets(cycles: &[Cycle]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut quiet = 240;
    for (c, cycle) in cycles.iter().enumerate() {
        for (i, s) in cycle.samples.iter().enumerate() {
            if s.abs() >= 0.25 {
                if quiet >= 240 {
                    found.push((c, i));
                }
                quiet = 0;
            } else if s.abs() < 0.01 {
                quiet += 1;
            } else {
                quiet = 0;
            }
        }
    }
    found
}

/// Starts `downbeat run PROJECT --device jack` with `extra` on `server` and waits for its
/// first output port.
fn run_downbeat(server: &Server, project: &str, extra: &[&str]) -> Spawned {
    let mut args = vec!["run", project, "--device", "jack", "--seconds", "600"];
    args.extend_from_slice(extra);
    let mut run = Spawned::start(
        server
            .downbeat(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    server.wait_for_port("downbeat:out_1", &mut run);
    run
}

/// Stops `run` (still running, as it should be after a few seconds of its ten minutes) and
/// checks that it did not fail on its own before.
fn stop_downbeat(mut run: Spawned) {
    assert!(
        run.exited().is_none(),
        "downbeat ended during the test: {:?}",
        run.finish(RUN_LIMIT)
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
    );
    run.stop("-TERM");
    let out = run.output(RUN_LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

/// `--transport jack`: the song's metronome clicks only while JACK's transport rolls, on
/// the beats of the frames JACK gives (each click on the exact frame of its beat, in the very
/// cycle JACK's transport passes it), and a locate in JACK moves the grid, stopped or rolling.
///
/// The steps, with `jack_transport`: stopped at 0 (silence), `play` (clicks at 0, 24,000,
/// 48,000...), `stop` (silence), `locate 96000` while stopped (beat 4: silence on it until
/// JACK rolls), `play` (beat 4's click in the first cycle that rolls, then 120,000...),
/// `locate 30000` while rolling (the next click is beat 2's at 48,000), `stop`.
#[test]
fn the_song_follows_jacks_transport_play_stop_and_locate() {
    let server = Server::start("transport-follow");
    let project = tmp("metronome.toml");
    std::fs::write(&project, METRONOME).unwrap();
    let run = run_downbeat(&server, project.to_str().unwrap(), &["--transport", "jack"]);
    let mut probe = Probe::start(&server, Some("downbeat:out_1"));
    let mut jack = TransportClient::start(&server);

    // Half a second of JACK standing at frame 0.
    let stopped = |n: usize| move |c: &[Cycle]| c.iter().filter(|c| !c.rolling).count() >= n;
    let half_second = (RATE / 2 / 256) as usize;
    let mut at = probe.wait(
        0,
        "half a second of cycles while stopped",
        stopped(half_second),
    );
    jack.send("play");
    at = probe.wait(at, "JACK to roll past frame 60,000", |c| {
        c.iter().any(|c| c.rolling && c.frame > 60_000)
    });
    jack.send("stop");
    at = probe.wait(at, "half a second of JACK stopped", stopped(half_second));
    jack.send("locate 96000");
    at = probe.wait(at, "JACK stopped at frame 96,000 for a while", |c| {
        c.iter().filter(|c| !c.rolling && c.frame == 96_000).count() >= 20
    });
    jack.send("play");
    at = probe.wait(at, "JACK to roll past frame 150,000", |c| {
        c.iter().any(|c| c.rolling && c.frame > 150_000)
    });
    jack.send("locate 30000");
    at = probe.wait(at, "JACK to roll from 30,000 past 80,000", |c| {
        let back = c.iter().position(|c| c.rolling && c.frame < 40_000);
        back.is_some_and(|b| c[b..].iter().any(|c| c.rolling && c.frame > 80_000))
    });
    jack.send("stop");
    probe.wait(
        at,
        "half a second of JACK stopped at the end",
        stopped(half_second),
    );
    let cycles = std::mem::take(&mut probe.seen);
    let xruns = probe.xruns.load(Ordering::Relaxed);
    drop(probe);
    stop_downbeat(run);

    let found = onsets(&cycles);
    // What went wrong, cycle by cycle. A cycle in which a client ran late (an xrun, which the
    // server reports) can hear `downbeat`'s output of another cycle: each may explain two
    // (a click missing where it was due, and heard a period off); none is allowed without.
    let mut wrong = Vec::new();
    // 1. Every click starts in a cycle where JACK rolls, on a beat's frame of JACK's.
    for &(c, i) in &found {
        let cycle = &cycles[c];
        let frame = cycle.frame + i as u64;
        if !cycle.rolling {
            wrong.push(format!(
                "a click at offset {i} of a cycle in which JACK's transport stood (frame {})",
                cycle.frame
            ));
        } else if frame % BEAT != 0 {
            wrong.push(format!(
                "a click at JACK's frame {frame} (cycle at {} + {i}), off the beats of {BEAT} \
                 frames",
                cycle.frame
            ));
        }
    }
    // 2. Every beat JACK's transport rolled over has its click, in that very cycle.
    let mut beats = 0;
    for (c, cycle) in cycles.iter().enumerate() {
        let n = cycle.samples.len() as u64;
        let first_beat = cycle.frame.div_ceil(BEAT) * BEAT;
        if cycle.rolling && first_beat < cycle.frame + n {
            beats += 1;
            let i = (first_beat - cycle.frame) as usize;
            if !found.contains(&(c, i)) {
                wrong.push(format!(
                    "no click on beat {} at JACK's frame {first_beat} (cycle at {})",
                    first_beat / BEAT,
                    cycle.frame
                ));
            }
        }
    }
    // Beats 0, 1, 2; 4, 5, 6; 2, 3: eight at least (more when a wait ran long).
    assert!(beats >= 8, "JACK rolled over {beats} beats only");
    // 3. Silent while stopped, but for the end of a click that began before the stop (150
    //    ms, under 30 cycles of 256 frames).
    let mut since_rolling = usize::MAX;
    for cycle in &cycles {
        since_rolling = if cycle.rolling {
            0
        } else {
            since_rolling.saturating_add(1)
        };
        if since_rolling > 30 && cycle.samples.iter().any(|&s| s != 0.0) {
            wrong.push(format!(
                "sound while JACK's transport stood at frame {}",
                cycle.frame
            ));
        }
    }
    assert!(
        wrong.len() <= 2 * xruns,
        "{} thing(s) wrong with {xruns} xrun(s) reported: {wrong:#?}\nclicks at JACK's frames {:?}",
        wrong.len(),
        found
            .iter()
            .map(|&(c, i)| cycles[c].frame + i as u64)
            .collect::<Vec<_>>()
    );
}

/// The project of the master test: 120 bpm in 3/4, 90 bpm from beat 6 (bar 2), 6/8 from
/// beat 12 (bar 4).
const SONG: &str = r#"
sample_rate = 48000
block_size = 256
edges = ["click -> out"]
[tempo]
bpm = 120
signature = "3/4"
changes = [
    { beat = 6, bpm = 90 },
    { beat = 12, signature = "6/8" },
]
[nodes.click]
type = "metronome"
gain = 0.5
[nodes.out]
type = "output"
"#;

/// [`SONG`]'s tempo map, made here as the project says.
fn song_map() -> TempoMap {
    TempoMap::new(
        120.0,
        "3/4".parse::<Signature>().unwrap(),
        &[TempoPoint {
            beat: 6.0,
            bpm: 90.0,
            ramp: 0.0,
        }],
        &[SignatureChange {
            beat: 12.0,
            signature: "6/8".parse().unwrap(),
        }],
        RATE as u32,
    )
    .unwrap()
}

/// (bar, beat, tick, numerator, denominator, bpm) a cycle's BBT says.
fn said(b: &TransportBBT) -> (usize, usize, usize, f32, f32, f64) {
    (b.bar, b.beat, b.tick, b.sig_num, b.sig_denom, b.bpm)
}

/// `--transport jack-master`: another client (the probe) reads, in every cycle, bar, beat
/// and tick (from 1, 960 ticks a beat), the signature and the tempo of the song's tempo map
/// at the frame JACK reports, rolling, after a locate while rolling, and after a locate
/// while stopped: through a tempo change and a signature change.
#[test]
fn as_timebase_master_the_song_gives_every_client_its_bar_beat_and_tempo() {
    let server = Server::start("transport-master");
    let project = tmp("song.toml");
    std::fs::write(&project, SONG).unwrap();
    let run = run_downbeat(
        &server,
        project.to_str().unwrap(),
        &["--transport", "jack-master"],
    );
    let mut probe = Probe::start(&server, Some("downbeat:out_1"));
    let mut jack = TransportClient::start(&server);
    let map = song_map();
    let valid = |n: usize, rolling: bool| {
        move |c: &[Cycle]| {
            c.iter()
                .filter(|c| c.rolling == rolling && c.bbt.is_some())
                .count()
                >= n
        }
    };
    // Bar 1 while stopped at 0: the first cycle after the master registered is a new
    // position, which it fills.
    let mut at = probe.wait(
        0,
        "a bar/beat/tick from the master while stopped",
        valid(5, false),
    );
    jack.send("play");
    at = probe.wait(
        at,
        "100 cycles rolling with a bar/beat/tick",
        valid(100, true),
    );
    // Beat 13.5: 6/8 and 90 bpm.
    let late = map.frame_of(13.5);
    jack.send(&format!("locate {late}"));
    at = probe.wait(at, "JACK to roll on from the frame of beat 13.5", |c| {
        c.iter()
            .filter(|c| c.rolling && c.frame >= late && c.frame < late + RATE && c.bbt.is_some())
            .count()
            >= 50
    });
    jack.send("stop");
    // Beat 7 while stopped: bar 3 (the third of 3/4), its second beat, 90 bpm.
    let seven = map.frame_of(7.0);
    jack.send(&format!("locate {seven}"));
    probe.wait(at, "JACK stopped at the frame of beat 7", |c| {
        c.iter()
            .filter(|c| !c.rolling && c.frame == seven && c.bbt.is_some())
            .count()
            >= 20
    });
    let cycles = std::mem::take(&mut probe.seen);
    let xruns = probe.xruns.load(Ordering::Relaxed);
    drop(probe);
    stop_downbeat(run);

    // By hand, where the map's answer is known.
    let at_seven = cycles
        .iter()
        .rev()
        .find(|c| c.frame == seven)
        .and_then(|c| c.bbt)
        .expect("a bar/beat/tick at beat 7");
    assert_eq!(said(&at_seven), (3, 2, 0, 3.0, 4.0, 90.0));
    assert_eq!(at_seven.ticks_per_beat, 960.0);
    // Two bars of three beats before bar 3.
    assert_eq!(at_seven.bar_start_tick, 6.0 * 960.0);
    let late_cycle = cycles
        .iter()
        .find(|c| c.frame == late)
        .and_then(|c| c.bbt)
        .expect("a bar/beat/tick at the frame located to, beat 13.5");
    // Bar 5 (from beat 12, in 6/8), 1.5 quarters in: its fourth eighth.
    assert_eq!(said(&late_cycle), (5, 4, 0, 6.0, 8.0, 90.0));

    // Every cycle, against the map at the frame JACK reported. A cycle after one in which
    // the master ran late (an xrun, which the server reports) still carries what it gave for
    // an earlier frame: each xrun may explain one such stale cycle, none is allowed without.
    let expected = |frame: u64| {
        let beat = map.beat_at_frame(frame);
        let want = map.bbt(beat);
        let signature = map.signature_at(map.beat_of_bar(want.bar));
        (
            want.bar as usize + 1,
            want.beat as usize + 1,
            want.tick as usize,
            f32::from(signature.numerator),
            f32::from(signature.denominator),
            map.bpm_at(beat),
        )
    };
    let mut checked = (0, 0);
    let mut stale = Vec::new();
    for c in &cycles {
        let Some(bbt) = c.bbt else { continue };
        assert_eq!(bbt.ticks_per_beat, 960.0);
        if c.rolling {
            checked.0 += 1;
        } else {
            checked.1 += 1;
        }
        if said(&bbt) == expected(c.frame) {
            continue;
        }
        let period = c.samples.len() as u64;
        let earlier = (1..=4).any(|k| {
            c.frame
                .checked_sub(k * period)
                .is_some_and(|f| said(&bbt) == expected(f))
        });
        assert!(
            earlier,
            "JACK's frame {} (beat {:.4}, rolling: {}): the master gave {:?}, the map says {:?}",
            c.frame,
            map.beat_at_frame(c.frame),
            c.rolling,
            said(&bbt),
            expected(c.frame)
        );
        stale.push(c.frame);
    }
    assert!(
        stale.len() <= xruns,
        "{} cycle(s) carried the bar/beat/tick of an earlier frame, with {xruns} xrun(s) \
         reported: at JACK's frames {stale:?}",
        stale.len()
    );
    assert!(
        checked.0 >= 150 && checked.1 >= 25,
        "{} rolling and {} stopped cycles had a bar/beat/tick",
        checked.0,
        checked.1
    );
}

/// OSC's `/transport/play`, `/stop` and `/locate` reach JACK's transport with `--transport
/// jack` (every JACK client sees them), and a transport command for a beat is refused.
#[test]
fn osc_transport_commands_go_to_jack() {
    let server = Server::start("transport-osc");
    let project = tmp("osc-metronome.toml");
    std::fs::write(&project, METRONOME).unwrap();
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = {
        // A free port for downbeat: bound, noted, freed.
        let free = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        free.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let run = run_downbeat(
        &server,
        project.to_str().unwrap(),
        &["--transport", "jack", "--osc", &addr],
    );
    let mut probe = Probe::start(&server, None);
    let send = |address: &str, args: Vec<rosc::OscType>| {
        let packet = rosc::OscPacket::Message(rosc::OscMessage {
            addr: address.into(),
            args,
        });
        socket
            .send_to(&rosc::encoder::encode(&packet).unwrap(), &addr)
            .unwrap();
    };
    let mut at = probe.wait(0, "a few cycles", |c| c.len() >= 10);
    send("/transport/locate", vec![rosc::OscType::Float(8.0)]);
    at = probe.wait(
        at,
        "JACK at beat 8 (frame 192,000) after /transport/locate 8",
        |c| c.iter().any(|c| !c.rolling && c.frame == 8 * BEAT),
    );
    send("/transport/play", vec![]);
    at = probe.wait(at, "JACK rolling after /transport/play", |c| {
        c.iter().any(|c| c.rolling && c.frame > 8 * BEAT)
    });
    send("/next_bar/transport/stop", vec![]);
    send("/transport/stop", vec![]);
    probe.wait(at, "JACK stopped after /transport/stop", |c| {
        c.iter().filter(|c| !c.rolling).count() >= 10
    });
    drop(probe);
    let mut run = run;
    run.stop("-TERM");
    let out = run.output(RUN_LIMIT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`/next_bar/transport/stop`: the song follows JACK's transport"),
        "the timed stop was not refused: {err}"
    );
}
