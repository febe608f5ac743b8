//! What the tests that run `downbeat` against a real `jackd -d dummy` share: a server of the
//! test's own (one test at a time), and processes killed and reaped when a test fails.
// Each test binary includes this module and uses a part of it.
#![allow(dead_code)]

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{repo, terminate};

/// One JACK test at a time, whatever `--test-threads` says: libjack names a client's
/// notification socket after the client alone (`/dev/shm/jack_downbeat_0_0`, whichever the
/// server), so two `downbeat` clients (or two `jack_lsp`s) opening at the same moment on two
/// servers take each other's socket, and one or both fail to open (issue 42: seen in one run
/// of this file in ten with two test threads).
pub static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How long a `jack_lsp` may take. It is a JACK client, and libjack's close can deadlock when
/// another client comes or goes at that moment (issue 42): a `jack_lsp` still running then is
/// killed, and the poll that ran it asks again.
pub const LSP_LIMIT: Duration = Duration::from_secs(5);

/// How long a `downbeat` run of a few seconds may take before it counts as hung: ample on a
/// loaded machine, and a hang fails the test instead of the suite's time limit.
pub const RUN_LIMIT: Duration = Duration::from_secs(60);

/// How long a server may take to answer, or a port to appear, after starting its process.
pub const APPEAR_LIMIT: Duration = Duration::from_secs(20);

/// A process a test started, killed and reaped when dropped: a test that fails (panics)
/// leaves no `downbeat` or JACK client behind.
pub struct Spawned {
    pub child: Child,
    pub what: String,
}

impl Spawned {
    pub fn start(cmd: &mut Command) -> Self {
        let what = std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{what}`: {e}"));
        Spawned { child, what }
    }

    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().unwrap()
    }

    /// Waits at most `limit` for the process to end: what it printed on the pipes it was
    /// given; the same, once killed, as the error when it was still running.
    pub fn finish(mut self, limit: Duration) -> Result<Output, Output> {
        let stdout = drain(self.child.stdout.take());
        let stderr = drain(self.child.stderr.take());
        let t = Instant::now();
        let (status, in_time) = loop {
            if let Some(status) = self.exited() {
                break (status, true);
            }
            if t.elapsed() > limit {
                let _ = self.child.kill();
                break (self.child.wait().unwrap(), false);
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = Output {
            status,
            stdout: stdout.join().unwrap(),
            stderr: stderr.join().unwrap(),
        };
        if in_time {
            Ok(out)
        } else {
            Err(out)
        }
    }

    /// As [`finish`](Self::finish); still running after `limit` fails the test.
    pub fn output(self, limit: Duration) -> Output {
        let what = self.what.clone();
        self.finish(limit).unwrap_or_else(|out| {
            panic!(
                "`{what}` was still running after {} s (killed); it printed: {}",
                limit.as_secs(),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// Sends `signal` (`"-TERM"`), then kills after five seconds: a JACK client unregisters,
    /// a recorder finalises its file.
    pub fn stop(&mut self, signal: &str) {
        terminate(&mut self.child, signal);
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Reads `pipe` to its end on a thread of its own, so that a full pipe never blocks the
/// process writing to it.
pub fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// Runs `cmd` to its end, what it prints captured; still running after `limit` fails the
/// test.
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    Spawned::start(cmd.stdout(Stdio::piped()).stderr(Stdio::piped())).output(limit)
}

/// A `jackd -d dummy` of a test's own, stopped when dropped. It holds the test's turn
/// ([`ONE_AT_A_TIME`]) until then.
pub struct Server {
    pub name: String,
    pub child: Child,
    _turn: MutexGuard<'static, ()>,
}

impl Server {
    pub fn start(tag: &str) -> Self {
        Self::start_at(tag, 48_000)
    }

    /// A server running at `rate` Hz.
    pub fn start_at(tag: &str, rate: u32) -> Self {
        // A test that failed holding the turn poisoned it; the next one can go on all the same.
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        let name = format!("downbeat-{tag}-{}", std::process::id());
        let child = Command::new("jackd")
            .args([
                "-n",
                &name,
                "-d",
                "dummy",
                "-r",
                &rate.to_string(),
                "-p",
                "256",
            ])
            .env("JACK_NO_AUDIO_RESERVATION", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("jackd is installed (apt-get install jackd2)");
        let mut s = Server {
            name,
            child,
            _turn: turn,
        };
        let t = Instant::now();
        while !s.lsp().is_some_and(|out| out.status.success()) {
            if let Some(status) = s.child.try_wait().unwrap() {
                panic!("jackd {} exited as it started ({status})", s.name);
            }
            assert!(
                t.elapsed() < APPEAR_LIMIT,
                "jackd {} did not answer jack_lsp within {} s",
                s.name,
                APPEAR_LIMIT.as_secs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        s
    }

    /// `jack_lsp`'s output, `None` when it had to be killed (see [`LSP_LIMIT`]).
    pub fn lsp(&self) -> Option<Output> {
        let mut cmd = Command::new("jack_lsp");
        cmd.env("JACK_DEFAULT_SERVER", &self.name)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        Spawned::start(&mut cmd).finish(LSP_LIMIT).ok()
    }

    /// Waits for `port`, which `owner` registers; `owner` exiting first fails the test at once.
    pub fn wait_for_port(&self, port: &str, owner: &mut Spawned) {
        let t = Instant::now();
        loop {
            if self
                .lsp()
                .is_some_and(|out| String::from_utf8_lossy(&out.stdout).contains(port))
            {
                return;
            }
            if let Some(status) = owner.exited() {
                let mut said = String::new();
                if let Some(mut pipe) = owner.child.stderr.take() {
                    let _ = pipe.read_to_string(&mut said);
                }
                panic!(
                    "`{}` exited ({status}) before its port {port} appeared: {said}",
                    owner.what
                );
            }
            assert!(
                t.elapsed() < APPEAR_LIMIT,
                "port {port} of `{}` did not appear within {} s",
                owner.what,
                APPEAR_LIMIT.as_secs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn downbeat(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_downbeat"));
        c.args(args)
            .current_dir(repo())
            .env("JACK_DEFAULT_SERVER", &self.name)
            .env("JACK_NO_AUDIO_RESERVATION", "1");
        c
    }

    /// Sends `signal` (`"-STOP"`, `"-CONT"`) to the server: whether it was sent.
    pub fn signal(&self, signal: &str) -> bool {
        Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Stops the server as `kill` would (SIGTERM), so it removes its shared-memory
    /// registration; a SIGKILLed jackd leaves it behind and JACK allows only a few servers.
    pub fn stop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // A server a test stopped (SIGSTOP) acts on SIGTERM only once continued.
            let _ = self.signal("-CONT");
        }
        terminate(&mut self.child, "-TERM");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}
