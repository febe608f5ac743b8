//! A JACK dummy server for the real-time case, whose log lines carry the time they
//! arrived: an xrun is then placed in a trial (start-up, steady state, shutdown), not only
//! counted, which is what tells a note-on burst or first touch (xruns at the start) from a
//! steady cost (xruns spread over the run). The server runs verbose (`-v`) so that it also
//! logs when a client activates, which is when Downbeat's voices start (its first callback
//! plays every note): its trial is timed from there, as scsynth's is from its `/s_new`s,
//! not from the spawn, whose start-up takes a varying part of a second.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::cases::{BLOCK, SAMPLE_RATE};
use super::EnginesError;

/// The line jackd logs for each cycle a client did not finish in time (then `: client =
/// NAME was not finished, state = STATE`; verbose jackd logs other `JackEngine::XRun` lines
/// about the same xrun, which are not counted).
const XRUN: &str = "JackEngine::XRun";
/// What the xrun line says after [`XRUN`].
const NOT_FINISHED: &str = "was not finished";
/// The line verbose jackd logs when a client activates (then ` ref = N name = NAME`).
const ACTIVATE: &str = "JackEngine::ClientActivate";

/// The server's log so far: each line with the instant it was read.
type Lines = Arc<Mutex<Vec<(Instant, String)>>>;

/// A JACK dummy server (`jackd -d dummy`, which paces cycles by the clock like a sound
/// card), stopped on drop.
pub(super) struct Server {
    child: Child,
    name: String,
    log: PathBuf,
    lines: Lines,
    readers: Vec<JoinHandle<()>>,
}

/// One xrun jackd logged: when, and the rest of its line (the client and its state).
pub(super) struct Xrun {
    pub at: Instant,
    pub line: String,
}

impl Server {
    /// Starts `jackd -v -n downbeat-bench-<pid> -d dummy -r 48000 -p 64`, its log in
    /// `dir/jackd.log`, and waits until it serves.
    pub(super) fn start(dir: &Path) -> Result<Self, EnginesError> {
        let name = format!("downbeat-bench-{}", std::process::id());
        let log = dir.join("jackd.log");
        let file = std::fs::File::create(&log)
            .map_err(|e| EnginesError::Setup(format!("{}: {e}", log.display())))?;
        let file = Arc::new(Mutex::new(file));
        let mut child = Command::new("jackd")
            .args(["-v", "-n", &name, "-d", "dummy", "-r"])
            .arg(SAMPLE_RATE.to_string())
            .arg("-p")
            .arg(BLOCK.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                EnginesError::Setup(format!(
                    "jackd: {e} (Debian jackd2; bench/ci.sh installs it)"
                ))
            })?;
        let lines: Lines = Arc::default();
        let mut readers = Vec::new();
        // jackd writes xruns to stderr; each stream gets a reader so neither pipe fills.
        let out = child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>);
        let err = child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>);
        for stream in [out, err].into_iter().flatten() {
            let (lines, file) = (Arc::clone(&lines), Arc::clone(&file));
            readers.push(std::thread::spawn(move || {
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    let at = Instant::now();
                    if let Ok(mut f) = file.lock() {
                        let _ = writeln!(f, "{line}");
                    }
                    if let Ok(mut l) = lines.lock() {
                        l.push((at, line));
                    }
                }
            }));
        }
        let server = Server {
            child,
            name,
            log,
            lines,
            readers,
        };
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

    /// The name clients find the server by (`JACK_DEFAULT_SERVER`).
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    fn text(&self) -> String {
        self.lines
            .lock()
            .map(|l| {
                l.iter()
                    .map(|(_, s)| s.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }

    /// When the client called `client` last activated after `from`, if it did.
    pub(super) fn activated_since(&self, from: Instant, client: &str) -> Option<Instant> {
        let name = format!("name = {client}");
        self.lines.lock().ok().and_then(|l| {
            l.iter()
                .rev()
                .take_while(|(at, _)| *at >= from)
                .find(|(_, line)| line.contains(ACTIVATE) && line.trim_end().ends_with(&name))
                .map(|(at, _)| *at)
        })
    }

    /// The xruns logged from `from` on (to now).
    pub(super) fn xruns_since(&self, from: Instant) -> Vec<Xrun> {
        self.lines
            .lock()
            .map(|l| {
                l.iter()
                    .filter(|(at, line)| {
                        *at >= from && line.contains(XRUN) && line.contains(NOT_FINISHED)
                    })
                    .map(|(at, line)| Xrun {
                        at: *at,
                        line: line.replace(XRUN, "").trim_start_matches(": ").to_owned(),
                    })
                    .collect()
            })
            .unwrap_or_default()
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
        let mut gone = false;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                gone = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if !gone {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // The pipes close with the process, which ends the readers.
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }
}
