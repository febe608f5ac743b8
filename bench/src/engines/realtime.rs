//! The real-time case: the most `voices` each engine plays for a while on a JACK server
//! (`jackd -d dummy -p 64`, which paces blocks by the clock like a sound card) without an
//! xrun. Downbeat plays through its JACK device (`--device jack`, one thread); scsynth runs
//! in real-time mode on the same server and gets the voices over OSC. An xrun is any
//! `JackEngine::XRun` the server logs (it names the client that was not finished) from
//! [`SETTLE`] after the voices start to the end of the trial: both engines' start-ups
//! (joining the server, scsynth's first blocks after a burst of `/s_new`) are left out
//! alike.
//!
//! The search doubles from [`FIRST`] voices until a trial has an xrun (or the synth's
//! limit, 1024 voices, passes), then bisects in steps of [`STEP`] voices.

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::cases::{Case, Kind, BLOCK, SAMPLE_RATE};
use super::sc::osc::{Arg, Message};
use super::{child, downbeat, sc, EnginesArgs, EnginesError, Setup};
use crate::report::Report;

/// Voices of the first trial.
const FIRST: usize = 64;
/// Resolution of the search, in voices.
const STEP: usize = 16;
/// Most voices a Downbeat synth node has (`graph::nodes::synth::MAX_VOICES`), the top of
/// the search for both engines.
const LIMIT: usize = 1024;
/// Time after the voices start before xruns count.
const SETTLE: Duration = Duration::from_millis(1500);
/// UDP port of the real-time scsynth.
const SC_PORT: u16 = 57_193;

/// A JACK dummy server, stopped on drop.
struct Server {
    child: Child,
    name: String,
    log: std::path::PathBuf,
}

impl Server {
    fn start(dir: &Path) -> Result<Self, EnginesError> {
        let name = format!("downbeat-bench-{}", std::process::id());
        let log = dir.join("jackd.log");
        let file = std::fs::File::create(&log)
            .map_err(|e| EnginesError::Setup(format!("{}: {e}", log.display())))?;
        let err2 = file
            .try_clone()
            .map_err(|e| EnginesError::Setup(e.to_string()))?;
        let child = Command::new("jackd")
            .args(["-n", &name, "-d", "dummy", "-r"])
            .arg(SAMPLE_RATE.to_string())
            .arg("-p")
            .arg(BLOCK.to_string())
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err2)
            .spawn()
            .map_err(|e| {
                EnginesError::Setup(format!(
                    "jackd: {e} (Debian jackd2; bench/ci.sh installs it)"
                ))
            })?;
        let server = Server { child, name, log };
        // The server is up once it has logged its start.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !server.text().contains("server starting") {
            if Instant::now() > deadline {
                return Err(EnginesError::Setup(format!(
                    "jackd did not start in 10 s; its log ({}) says: {}",
                    server.log.display(),
                    server.text()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        Ok(server)
    }

    fn text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Xruns the server has logged so far.
    fn xruns(&self) -> usize {
        self.text().matches("JackEngine::XRun").count()
    }
}

impl Drop for Server {
    /// Asks jackd to stop (SIGTERM, so it removes its registration from `/dev/shm`), and
    /// kills it if it has not within 3 s.
    fn drop(&mut self) {
        // SAFETY: the pid is our child's, not yet reaped.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the real-time case for both engines and adds its rows and ratio.
pub(super) fn run(args: &EnginesArgs, s: &Setup, report: &mut Report) -> Result<(), EnginesError> {
    let quick = args.common.quick;
    let seconds = args.rt_seconds.unwrap_or(if quick { 2.0 } else { 60.0 });
    let limit = if quick { FIRST } else { LIMIT };
    let server = Server::start(&s.dir)?;
    let mut found = Vec::new();
    for engine in ["downbeat", "scsynth"] {
        let mut trial = |n: usize| -> Result<bool, EnginesError> {
            let xruns = match engine {
                "downbeat" => play_downbeat(s, &server, n, seconds)?,
                _ => play_scsynth(s, &server, n, seconds)?,
            };
            let line = format!("realtime: {engine} with {n} voices for {seconds} s: {xruns} xruns");
            // On stderr as well: a full search takes minutes, and --json drops the notes.
            eprintln!("bench engines: {line}");
            report.notes.push(line);
            Ok(xruns == 0)
        };
        let best = search(&mut trial, if quick { STEP } else { FIRST }, limit)?;
        report.add("realtime_voices", engine, "voices", &[best as f64]);
        found.push(best);
    }
    if found[1] > 0 {
        report.ratios.insert(
            "realtime_vs_scsynth".into(),
            (found[0] as f64 / found[1] as f64 * 1000.0).round() / 1000.0,
        );
    }
    report.notes.push(format!(
        "realtime: jackd -d dummy -r {SAMPLE_RATE} -p {BLOCK}, {seconds} s per trial, search in steps of {STEP} up to {limit} voices"
    ));
    Ok(())
}

/// The most voices (a multiple of [`STEP`], at most `limit`) for which `ok` holds,
/// assuming it holds for fewer whenever it holds for more; 0 when even [`STEP`] fails.
fn search(
    ok: &mut dyn FnMut(usize) -> Result<bool, EnginesError>,
    first: usize,
    limit: usize,
) -> Result<usize, EnginesError> {
    let mut good = 0;
    let mut bad;
    let mut n = first.min(limit);
    // Double until a failure or the limit.
    loop {
        if ok(n)? {
            good = n;
            if n == limit {
                return Ok(n);
            }
            n = (n * 2).min(limit);
        } else {
            bad = n;
            break;
        }
    }
    while bad - good > STEP {
        let mid = (good + bad) / 2 / STEP * STEP;
        let mid = mid.max(good + STEP);
        if ok(mid)? {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Ok(good)
}

/// Plays `n` voices for `seconds` on Downbeat; the xruns after [`SETTLE`].
fn play_downbeat(
    s: &Setup,
    server: &Server,
    n: usize,
    seconds: f64,
) -> Result<usize, EnginesError> {
    let case = Case {
        kind: Kind::Voices,
        n,
        seconds,
    };
    let io =
        |e: std::io::Error| EnginesError::Setup(format!("writing in {}: {e}", s.dir.display()));
    let project = s.dir.join("realtime.toml");
    let midi = s.dir.join("realtime.mid");
    std::fs::write(&project, downbeat::project(&case)).map_err(io)?;
    std::fs::write(&midi, downbeat::notes(n)).map_err(io)?;
    let mut cmd = Command::new(&s.downbeat);
    cmd.env("JACK_DEFAULT_SERVER", &server.name)
        .arg("run")
        .arg(&project)
        .args(["--device", "jack", "--threads", "1", "--seconds"])
        .arg(seconds.to_string())
        .arg("--midi")
        .arg(&midi);
    let running = child::spawn(cmd, &[1], &s.dir.join("realtime-downbeat.log"))?;
    std::thread::sleep(SETTLE);
    let before = server.xruns();
    running.wait()?;
    Ok(server.xruns() - before)
}

/// Plays `n` voices for `seconds` on scsynth; the xruns after [`SETTLE`].
fn play_scsynth(s: &Setup, server: &Server, n: usize, seconds: f64) -> Result<usize, EnginesError> {
    let case = Case {
        kind: Kind::Voices,
        n,
        seconds,
    };
    let log = s.dir.join("realtime-scsynth.log");
    let mut cmd = Command::new("scsynth");
    cmd.env("JACK_DEFAULT_SERVER", &server.name)
        .args(["-u", &SC_PORT.to_string(), "-z", &BLOCK.to_string()])
        .args([
            "-i", "0", "-o", "1", "-n", "16384", "-w", "1024", "-m", "65536",
        ])
        .args(["-D", "0", "-R", "0"]);
    let running = child::spawn(cmd, &[1], &log)?;
    let result = drive_scsynth(&case, seconds, server);
    // Whatever happened, the server must go.
    if result.is_err() {
        // SAFETY: the pid is our child, not yet reaped.
        unsafe {
            libc::kill(running.pid(), libc::SIGKILL);
        }
        let _ = running.wait();
        return result;
    }
    running.wait()?;
    result
}

/// Sets up the voices on the real-time scsynth, lets them play `seconds`, and quits it.
fn drive_scsynth(case: &Case, seconds: f64, server: &Server) -> Result<usize, EnginesError> {
    let fail = |what: String| EnginesError::Setup(format!("scsynth on UDP {SC_PORT}: {what}"));
    let sock = UdpSocket::bind("127.0.0.1:0").map_err(|e| fail(e.to_string()))?;
    sock.connect(("127.0.0.1", SC_PORT))
        .map_err(|e| fail(e.to_string()))?;
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .map_err(|e| fail(e.to_string()))?;
    let send = |m: &Message| sock.send(&m.bytes()).map(|_| ());
    // Ask until the server answers, then wait for the asynchronous set-up with /sync.
    let ask = |m: &Message, reply: &str, within: Duration| -> Result<(), EnginesError> {
        let deadline = Instant::now() + within;
        let mut buf = [0u8; 65536];
        loop {
            let _ = send(m);
            let again = Instant::now() + Duration::from_millis(500);
            while Instant::now() < again {
                if let Ok(len) = sock.recv(&mut buf) {
                    if buf[..len].starts_with(reply.as_bytes()) {
                        return Ok(());
                    }
                }
            }
            if Instant::now() > deadline {
                return Err(fail(format!("no {reply} within {within:?}")));
            }
        }
    };
    ask(
        &Message::new("/status", vec![]),
        "/status.reply",
        Duration::from_secs(15),
    )?;
    let (setup, nodes) = sc::commands(case);
    for m in &setup {
        send(m).map_err(|e| fail(e.to_string()))?;
    }
    ask(
        &Message::new("/sync", vec![Arg::Int(1)]),
        "/synced",
        Duration::from_secs(15),
    )?;
    for m in &nodes {
        send(m).map_err(|e| fail(e.to_string()))?;
    }
    std::thread::sleep(SETTLE);
    let before = server.xruns();
    std::thread::sleep(Duration::from_secs_f64(seconds).saturating_sub(SETTLE));
    let xruns = server.xruns() - before;
    send(&Message::new("/quit", vec![])).map_err(|e| fail(e.to_string()))?;
    Ok(xruns)
}
