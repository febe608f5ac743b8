//! The real-time case: the most `voices` each engine plays for a while on a JACK server
//! (`jackd -d dummy -p 64`, which paces blocks by the clock like a sound card) without an
//! xrun. Downbeat plays through its JACK device (`--device jack`, one thread); scsynth runs
//! in real-time mode on the same server and gets the voices over OSC. An xrun is any
//! `JackEngine::XRun` the server logs (it names the client that was not finished) from
//! [`SETTLE`] after the voices start to the end of their `seconds`: for Downbeat from the
//! activation of its JACK client (its first callback plays every note), for scsynth from
//! its `/s_new`s. Both engines' start-ups (joining the server, the burst of note-ons) and
//! shutdowns are left out alike.
//!
//! The search doubles from [`FIRST`] voices until a trial has an xrun (or the synth's
//! limit, 1024 voices, passes), then bisects in steps of [`STEP`] voices. The two engines'
//! searches advance in step, one trial each in turn, so that a busy spell of the machine
//! falls on both rather than on whichever searched first. `--rt-voices` plays fixed numbers
//! of voices instead, to compare the engines' xruns (and when they came) trial by trial.

use std::net::UdpSocket;
use std::process::Command;
use std::time::{Duration, Instant};

use super::cases::{Case, Kind, BLOCK, SAMPLE_RATE};
use super::jackd::Server;
use super::sc::osc::{Arg, Message};
use super::{child, downbeat, sc, EnginesArgs, EnginesError, Setup};
use crate::report::{alternating, Report};

/// Voices of the first trial.
const FIRST: usize = 64;
/// Resolution of the search, in voices.
const STEP: usize = 16;
/// Most voices a Downbeat synth node has (`graph::nodes::synth::MAX_VOICES`), the top of
/// the search for both engines.
const LIMIT: usize = 1024;
/// Time after the voices start before xruns count.
const SETTLE: Duration = Duration::from_millis(1500);
/// Xruns of a trial listed by time in its note; the rest are counted.
const LISTED: usize = 8;
/// The JACK client name of `downbeat run --device jack`.
const DOWNBEAT_CLIENT: &str = "downbeat";
/// UDP port of the real-time scsynth.
const SC_PORT: u16 = 57_193;

/// The rivals, in the order of the first run.
const ENGINES: [&str; 2] = ["downbeat", "scsynth"];

/// What one trial saw: every xrun jackd logged from the moment the voices were asked for
/// (Downbeat's spawn, scsynth's `/s_new`s) until the engine was gone.
struct Trial {
    /// Seconds after that moment of each xrun, with the state jackd found the client in
    /// (`Triggered`: woken but not yet running, so the thread was not scheduled in time;
    /// `Running`: started and not finished).
    xruns: Vec<(f64, String)>,
    /// Length of the trial in seconds.
    seconds: f64,
    /// The engine's real-time threads while it played (see [`rt_threads`]).
    threads: String,
}

impl Trial {
    /// The xruns that count: from [`SETTLE`] to the end of the trial's audio, so that
    /// neither engine's start-up nor its shutdown is in it.
    fn counted(&self) -> usize {
        self.xruns
            .iter()
            .filter(|(t, _)| *t >= SETTLE.as_secs_f64() && *t <= self.seconds)
            .count()
    }

    /// `N xruns (at 3.10 s Running, 6.00 s Triggered; not counted: 0.12 s Running)`.
    fn describe(&self) -> String {
        // A burst can hold a hundred xruns: the first few say where it was.
        let at = |counted: bool| -> (usize, String) {
            let all: Vec<String> = self
                .xruns
                .iter()
                .filter(|(t, _)| (*t >= SETTLE.as_secs_f64() && *t <= self.seconds) == counted)
                .map(|(t, state)| format!("{t:.2} s {state}"))
                .collect();
            let mut text = all[..all.len().min(LISTED)].join(", ");
            if all.len() > LISTED {
                text.push_str(&format!(" and {} more", all.len() - LISTED));
            }
            (all.len(), text)
        };
        let ((n, inside), (m, outside)) = (at(true), at(false));
        let mut parts = Vec::new();
        if n > 0 {
            parts.push(format!("at {inside}"));
        }
        if m > 0 {
            parts.push(format!("not counted: {outside}"));
        }
        let mut s = format!("{n} xruns");
        if !parts.is_empty() {
            s.push_str(&format!(" ({})", parts.join("; ")));
        }
        s
    }
}

/// Runs the real-time case for both engines and adds its rows and ratio: the search for
/// the most voices, or with `--rt-voices` the xruns at those numbers of voices.
pub(super) fn run(args: &EnginesArgs, s: &Setup, report: &mut Report) -> Result<(), EnginesError> {
    let quick = args.common.quick;
    let seconds = args.rt_seconds.unwrap_or(if quick { 2.0 } else { 60.0 });
    let server = Server::start(&s.dir)?;
    if !args.rt_voices.is_empty() {
        return fixed(args, s, &server, seconds, report);
    }
    let limit = if quick { FIRST } else { LIMIT };
    let first = if quick { STEP } else { FIRST };
    // The two searches advance in step, one trial each in turn (the order alternating
    // round by round), so that both engines meet the same spells of a busy machine.
    let mut searches = [Search::new(first, limit), Search::new(first, limit)];
    let mut round = 0;
    while searches.iter().any(|s| s.next().is_some()) {
        for e in alternating(&[0, 1], round) {
            if let Some(n) = searches[e].next() {
                let t = play(s, &server, ENGINES[e], n, seconds)?;
                note(report, ENGINES[e], n, &t);
                searches[e].record(n, t.counted() == 0);
            }
        }
        round += 1;
    }
    for (engine, search) in ENGINES.iter().zip(&searches) {
        report.add("realtime_voices", engine, "voices", &[search.best() as f64]);
    }
    let found = searches.map(|s| s.best());
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

/// `--rt-voices`: each number of voices on each engine, `--runs` times (default 3), the
/// engines alternating; a row of xruns per number of voices and engine.
fn fixed(
    args: &EnginesArgs,
    s: &Setup,
    server: &Server,
    seconds: f64,
    report: &mut Report,
) -> Result<(), EnginesError> {
    let runs = args
        .common
        .runs
        .unwrap_or(if args.common.quick { 1 } else { 3 })
        .max(1);
    let mut counts = vec![[Vec::new(), Vec::new()]; args.rt_voices.len()];
    for k in 0..runs {
        for (i, &n) in args.rt_voices.iter().enumerate() {
            for engine in alternating(&ENGINES, k) {
                let t = play(s, server, engine, n, seconds)?;
                note(report, engine, n, &t);
                let e = usize::from(engine != ENGINES[0]);
                counts[i][e].push(t.counted() as f64);
            }
        }
    }
    for (i, &n) in args.rt_voices.iter().enumerate() {
        for (e, engine) in ENGINES.iter().enumerate() {
            report.add(
                &format!("realtime_xruns_{n}"),
                engine,
                "xruns",
                &counts[i][e],
            );
        }
    }
    report.notes.push(format!(
        "realtime: jackd -d dummy -r {SAMPLE_RATE} -p {BLOCK}, {seconds} s per trial, xruns from {SETTLE:?} to the end of each trial, {runs} runs alternating"
    ));
    Ok(())
}

/// One trial of `n` voices for `seconds` on `engine`.
fn play(
    s: &Setup,
    server: &Server,
    engine: &str,
    n: usize,
    seconds: f64,
) -> Result<Trial, EnginesError> {
    match engine {
        "downbeat" => play_downbeat(s, server, n, seconds),
        _ => play_scsynth(s, server, n, seconds),
    }
}

/// Adds a trial's line to the notes and to stderr (a full search takes minutes, and
/// `--json` drops the notes).
fn note(report: &mut Report, engine: &str, n: usize, t: &Trial) {
    let line = format!(
        "realtime: {engine} with {n} voices for {} s ({}): {}",
        t.seconds,
        t.threads,
        t.describe()
    );
    eprintln!("bench engines: {line}");
    report.notes.push(line);
}

/// One engine's search for the most voices (a multiple of [`STEP`], at most the limit) it
/// plays without an xrun, assuming it does for fewer whenever it does for more: doubling
/// from the first number until a trial fails or the limit passes, then bisecting. 0 when
/// even the smallest fails.
#[derive(Debug)]
struct Search {
    good: usize,
    bad: Option<usize>,
    next: Option<usize>,
    limit: usize,
}

impl Search {
    fn new(first: usize, limit: usize) -> Self {
        Self {
            good: 0,
            bad: None,
            next: Some(first.min(limit)),
            limit,
        }
    }

    /// The number of voices of the next trial; `None` once the search is over.
    fn next(&self) -> Option<usize> {
        self.next
    }

    /// Takes the outcome of the trial of `n` voices (`ok`: no xrun).
    fn record(&mut self, n: usize, ok: bool) {
        if ok {
            self.good = n;
        } else {
            self.bad = Some(n);
        }
        self.next = match self.bad {
            None if n >= self.limit => None,
            None => Some((n * 2).min(self.limit)),
            Some(bad) if bad - self.good > STEP => {
                Some(((self.good + bad) / 2 / STEP * STEP).max(self.good + STEP))
            }
            Some(_) => None,
        };
    }

    /// The most voices that played without an xrun so far.
    fn best(&self) -> usize {
        self.good
    }
}

/// The xruns `server` logged since `start`, as a [`Trial`] of `seconds`.
fn trial(server: &Server, start: Instant, seconds: f64, threads: String) -> Trial {
    let xruns = server
        .xruns_since(start)
        .into_iter()
        .map(|x| {
            let state = x.line.rsplit("state = ").next().unwrap_or("").trim();
            (x.at.duration_since(start).as_secs_f64(), state.to_owned())
        })
        .collect();
    Trial {
        xruns,
        seconds,
        threads,
    }
}

/// The real-time threads of process `pid` and their priorities, from
/// `/proc/PID/task/*/stat`: `SCHED_FIFO 5` for a JACK client's process thread under a
/// jackd at priority 10, so each trial's note shows both engines got the same.
fn rt_threads(pid: libc::pid_t) -> String {
    let mut found: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("stat")).ok())
        .filter_map(|stat| {
            // After the name (in parentheses, which may hold anything) come the fields
            // from the 3rd on: rt_priority is the 40th, policy the 41st.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            let priority = fields.get(37)?;
            match *fields.get(38)? {
                "1" => Some(format!("SCHED_FIFO {priority}")),
                "2" => Some(format!("SCHED_RR {priority}")),
                _ => None,
            }
        })
        .collect();
    found.sort();
    if found.is_empty() {
        "no real-time thread".into()
    } else {
        format!("real-time threads: {}", found.join(", "))
    }
}

/// Plays `n` voices for `seconds` on Downbeat; the trial is timed from the activation of
/// its JACK client, whose first callback plays every note.
fn play_downbeat(
    s: &Setup,
    server: &Server,
    n: usize,
    seconds: f64,
) -> Result<Trial, EnginesError> {
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
    cmd.env("JACK_DEFAULT_SERVER", server.name())
        .arg("run")
        .arg(&project)
        .args(["--device", "jack", "--threads", "1", "--seconds"])
        .arg(seconds.to_string())
        .arg("--midi")
        .arg(&midi);
    let spawned = Instant::now();
    let log = s.dir.join("realtime-downbeat.log");
    let running = child::spawn(cmd, &[1], None, &log)?;
    // Its threads once it plays (or, if it never does, before the trial would be over).
    let deadline = spawned + Duration::from_secs_f64(seconds.min(10.0));
    while server.activated_since(spawned, DOWNBEAT_CLIENT).is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let threads = rt_threads(running.pid());
    running.wait()?;
    let start = server
        .activated_since(spawned, DOWNBEAT_CLIENT)
        .ok_or_else(|| {
            EnginesError::Setup(format!(
                "jackd logged no activation of the client `{DOWNBEAT_CLIENT}` (see {})",
                log.display()
            ))
        })?;
    Ok(trial(server, start, seconds, threads))
}

/// Plays `n` voices for `seconds` on scsynth.
fn play_scsynth(s: &Setup, server: &Server, n: usize, seconds: f64) -> Result<Trial, EnginesError> {
    let case = Case {
        kind: Kind::Voices,
        n,
        seconds,
    };
    let log = s.dir.join("realtime-scsynth.log");
    let mut cmd = Command::new("scsynth");
    cmd.env("JACK_DEFAULT_SERVER", server.name())
        .args(["-u", &SC_PORT.to_string(), "-z", &BLOCK.to_string()])
        .args([
            "-i", "0", "-o", "1", "-n", "16384", "-w", "1024", "-m", "65536",
        ])
        .args(["-D", "0", "-R", "0"]);
    let running = child::spawn(cmd, &[1], None, &log)?;
    let start = match drive_scsynth(&case, seconds, running.pid()) {
        Ok(start) => start,
        Err(e) => {
            // Whatever happened, the server must go.
            // SAFETY: the pid is our child, not yet reaped.
            unsafe {
                libc::kill(running.pid(), libc::SIGKILL);
            }
            let _ = running.wait();
            return Err(e);
        }
    };
    running.wait()?;
    Ok(trial(server, start.0, seconds, start.1))
}

/// Sets up the voices on the real-time scsynth (process `pid`), lets them play `seconds`,
/// and quits it; returns when the voices were asked for, and its real-time threads.
fn drive_scsynth(
    case: &Case,
    seconds: f64,
    pid: libc::pid_t,
) -> Result<(Instant, String), EnginesError> {
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
    let start = Instant::now();
    for m in &nodes {
        send(m).map_err(|e| fail(e.to_string()))?;
    }
    std::thread::sleep(Duration::from_millis(200));
    let threads = rt_threads(pid);
    std::thread::sleep(Duration::from_secs_f64(seconds).saturating_sub(start.elapsed()));
    send(&Message::new("/quit", vec![])).map_err(|e| fail(e.to_string()))?;
    Ok((start, threads))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against an engine that plays up to `most` voices.
    fn search_with(most: usize, first: usize, limit: usize) -> (usize, Vec<usize>) {
        let mut s = Search::new(first, limit);
        let mut tried = Vec::new();
        while let Some(n) = s.next() {
            tried.push(n);
            s.record(n, n <= most);
        }
        (s.best(), tried)
    }

    #[test]
    fn a_process_real_time_threads_are_named_with_their_priority() {
        // A child, not this process, whose other tests may run real-time threads.
        let mut child = Command::new("sleep").arg("30").spawn().expect("sleep runs");
        let pid = child.id() as libc::pid_t;
        assert_eq!(rt_threads(pid), "no real-time thread");
        let param = libc::sched_param { sched_priority: 3 };
        // SAFETY: sets the policy of our own child with a valid parameter.
        let rc = unsafe { libc::sched_setscheduler(pid, libc::SCHED_FIFO, &param) };
        let err = std::io::Error::last_os_error();
        let seen = rt_threads(pid);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(rc, 0, "SCHED_FIFO for a child refused ({err}): run as root");
        assert_eq!(seen, "real-time threads: SCHED_FIFO 3");
    }

    #[test]
    fn the_search_doubles_then_bisects_to_the_step() {
        let (best, tried) = search_with(200, 64, 1024);
        assert_eq!(best, 192);
        assert_eq!(tried, [64, 128, 256, 192, 224, 208]);
        assert_eq!(search_with(40, 64, 1024).0, 32);
        assert_eq!(search_with(5, 64, 1024).0, 0);
        assert_eq!(
            search_with(5000, 64, 1024),
            (1024, vec![64, 128, 256, 512, 1024])
        );
    }

    #[test]
    fn only_xruns_between_the_settling_and_the_end_count() {
        let t = Trial {
            xruns: vec![
                (0.2, "Triggered".into()),
                (SETTLE.as_secs_f64() + 0.1, "Running".into()),
                (9.9, "Triggered".into()),
                (10.3, "Running".into()),
            ],
            seconds: 10.0,
            threads: String::new(),
        };
        assert_eq!(t.counted(), 2);
        let early = Trial {
            xruns: vec![(0.2, "Triggered".into())],
            seconds: 10.0,
            threads: String::new(),
        };
        assert_eq!(early.counted(), 0);
        assert_eq!(early.describe(), "0 xruns (not counted: 0.20 s Triggered)");
        let burst = Trial {
            xruns: (0..LISTED + 3)
                .map(|i| (2.0 + i as f64, "Triggered".into()))
                .collect(),
            seconds: 60.0,
            threads: String::new(),
        };
        assert!(burst
            .describe()
            .starts_with(&format!("{} xruns (at 2.00 s Triggered, ", LISTED + 3)));
        assert!(burst.describe().ends_with(" s Triggered and 3 more)"));
        assert_eq!(burst.describe().matches("Triggered").count(), LISTED);
        assert_eq!(
            t.describe(),
            "2 xruns (at 1.60 s Running, 9.90 s Triggered; not counted: 0.20 s Triggered, 10.30 s Running)"
        );
    }
}
