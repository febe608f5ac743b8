//! The in-process measurements (cases `apply` and `firewheel`): a control thread that edits
//! and compiles, an audio thread that plays blocks and is timed, the same for every system.
//!
//! The audio thread is pinned to the last core at `SCHED_FIFO` 80 (the virtual device's
//! priority), the control thread to the first at normal priority, as an application's UI
//! thread would be: each engine compiles off the audio thread, as it is built to. One trial:
//!
//! 1. the audio thread sleeps 1 ms (no real-time thread may take a whole core: the kernel
//!    throttles it), has the control thread free what came back from the last edit, and
//!    plays a few blocks untimed to warm its caches again;
//! 2. it asks the control thread for nothing and spins until the answer, then times an
//!    ordinary block;
//! 3. it asks the control thread for the edit and spins until it is compiled and sent, then
//!    times the block that applies it.
//!
//! Both timed blocks thus follow the same spin on a hot core, and their difference is what
//! applying the edit costs. Every block's output is checked against what the graph plays.
//! Systems of one size run in rounds, in alternating order ([`alternating`]), so that none
//! always runs first or last.

use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};

use downbeat_rt::pool::{available_cores, pin_current_thread, set_current_thread_realtime};

use super::nodes::{LEVEL, PEAK};
use super::{firewheel, systems, Error, BLOCK};
use crate::report::alternating;

/// `SCHED_FIFO` priority of the audio thread: the virtual device's.
const AUDIO_PRIORITY: i32 = 80;
/// Untimed blocks before each timed pair, after the pause.
const WARM_BLOCKS: usize = 4;
/// Blocks each system plays before its first two edits, which are not recorded either.
const SETTLE_BLOCKS: usize = 64;
/// The pause before each trial.
const PAUSE: Duration = Duration::from_millis(1);
/// Longest wait for the control thread (a 1000-node compile takes milliseconds).
const PATIENCE: Duration = Duration::from_secs(20);
/// Edits per system and round.
const PER_ROUND: usize = 20;

/// The systems measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Downbeat's `Editor` and a `Schedule` played directly, on built-in sines and mix: the
    /// `apply` case, with `take_over` timed alone.
    Schedule,
    /// Downbeat's `LiveEditor` and `Engine`, on the twin kernels.
    Engine,
    /// Firewheel's context and processor, on the twin kernels.
    Firewheel,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Schedule | Kind::Engine => "downbeat",
            Kind::Firewheel => "firewheel",
        }
    }
}

/// One system's control-thread half.
pub trait Control {
    /// Frees what the audio side handed back since the last call.
    fn tidy(&mut self) -> Result<(), Error>;
    /// Adds the DC node, connected to the mix, or removes it, compiles the batch and sends
    /// it to the audio side; returns the seconds the compile and send took (not the calls
    /// that make the batch).
    fn edit(&mut self, add: bool) -> Result<f64, Error>;
}

/// One system's audio-thread half.
pub trait Audio: Send {
    /// Plays one block of [`BLOCK`] frames into `out` (mono), applying an edit sent since
    /// the last one. Allocates nothing.
    fn block(&mut self, out: &mut [f32]);
    /// The seconds the last block spent taking an edit over, for a system that can time it
    /// alone.
    fn take_apply(&mut self) -> Option<f64> {
        None
    }
}

/// A system's two halves, as built on the control thread.
pub type Halves = (Box<dyn Control>, Box<dyn Audio>);

fn build(kind: Kind, size: usize) -> Result<Halves, Error> {
    match kind {
        Kind::Schedule => systems::schedule(size),
        Kind::Engine => systems::engine(size),
        Kind::Firewheel => firewheel::system(size),
    }
}

/// One system's figures at one size, in seconds, one entry per recorded edit.
#[derive(Debug)]
pub struct Samples {
    pub kind: Kind,
    pub size: usize,
    pub plain: Vec<f64>,
    pub edit: Vec<f64>,
    /// `edit - plain`, trial by trial.
    pub cost: Vec<f64>,
    pub compile: Vec<f64>,
    /// `take_over` alone, where the system reports it.
    pub apply: Vec<f64>,
}

enum Cmd {
    Build(Kind, usize),
    Noop,
    Tidy(usize),
    Edit(usize, bool),
    Drop(usize),
}

enum Reply {
    Built(usize, Box<dyn Audio>),
    Done,
    Compiled(f64),
    Failed(Error),
}

/// The control thread: builds the systems (Firewheel's context cannot leave the thread that
/// made it) and runs their control halves on request.
fn control(rx: Receiver<Cmd>, tx: Sender<Reply>) {
    let mut systems: Vec<Option<Box<dyn Control>>> = Vec::new();
    for cmd in rx {
        let reply = match cmd {
            Cmd::Build(kind, size) => match build(kind, size) {
                Ok((c, a)) => {
                    systems.push(Some(c));
                    Reply::Built(systems.len() - 1, a)
                }
                Err(e) => Reply::Failed(e),
            },
            Cmd::Noop => Reply::Done,
            Cmd::Tidy(id) => match systems.get_mut(id).and_then(Option::as_mut) {
                Some(c) => c.tidy().map_or_else(Reply::Failed, |()| Reply::Done),
                None => Reply::Failed(Error::Thread(format!("no system {id}"))),
            },
            Cmd::Edit(id, add) => match systems.get_mut(id).and_then(Option::as_mut) {
                Some(c) => c.edit(add).map_or_else(Reply::Failed, Reply::Compiled),
                None => Reply::Failed(Error::Thread(format!("no system {id}"))),
            },
            Cmd::Drop(id) => {
                if let Some(slot) = systems.get_mut(id) {
                    *slot = None;
                }
                Reply::Done
            }
        };
        if tx.send(reply).is_err() {
            return;
        }
    }
}

/// The audio thread's line to the control thread.
struct Link {
    tx: Sender<Cmd>,
    rx: Receiver<Reply>,
}

impl Link {
    /// Sends `cmd` and spins until the answer: the audio thread stays on a hot core, as it
    /// would between two callbacks that come fast.
    fn call(&self, cmd: Cmd) -> Result<Reply, Error> {
        self.tx
            .send(cmd)
            .map_err(|_| Error::Thread("the control thread is gone".to_owned()))?;
        let start = Instant::now();
        loop {
            match self.rx.try_recv() {
                Ok(Reply::Failed(e)) => return Err(e),
                Ok(reply) => return Ok(reply),
                Err(TryRecvError::Empty) if start.elapsed() < PATIENCE => {
                    std::hint::spin_loop();
                }
                Err(TryRecvError::Empty) => {
                    return Err(Error::Timeout(format!(
                        "the control thread did not answer in {} s",
                        PATIENCE.as_secs()
                    )))
                }
                Err(TryRecvError::Disconnected) => {
                    return Err(Error::Thread("the control thread is gone".to_owned()))
                }
            }
        }
    }

    fn done(&self, cmd: Cmd) -> Result<(), Error> {
        match self.call(cmd)? {
            Reply::Done => Ok(()),
            _ => Err(Error::Thread("unexpected answer".to_owned())),
        }
    }
}

/// What the output of a block must be: the graph's oscillators (audible, within their
/// summed amplitude), plus the DC on every sample when the added node is in.
fn check(out: &[f32], with_dc: bool) -> Result<(), String> {
    let peak = out.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let rms = (out.iter().map(|x| x * x).sum::<f32>() / out.len() as f32).sqrt();
    let lowest = out.iter().fold(f32::INFINITY, |m, &x| m.min(x));
    if with_dc {
        if lowest < LEVEL - PEAK - 1e-3 {
            return Err(format!(
                "the added node is missing: lowest sample {lowest}, expected at least {}",
                LEVEL - PEAK
            ));
        }
    } else if peak > PEAK + 1e-3 || rms < 1e-4 || !rms.is_finite() {
        return Err(format!(
            "expected the oscillators alone (peak at most {PEAK}, not silent): peak {peak}, \
             rms {rms}"
        ));
    }
    Ok(())
}

struct Trial {
    plain: f64,
    edit: f64,
    compile: f64,
    apply: Option<f64>,
}

struct Running {
    kind: Kind,
    size: usize,
    id: usize,
    audio: Box<dyn Audio>,
    with_dc: bool,
}

impl Running {
    fn checked(&mut self, out: &mut [f32]) -> Result<(), Error> {
        self.audio.block(out);
        self.check_played(out)
    }

    fn trial(&mut self, link: &Link, out: &mut [f32]) -> Result<Trial, Error> {
        std::thread::sleep(PAUSE);
        link.done(Cmd::Tidy(self.id))?;
        for _ in 0..WARM_BLOCKS {
            self.checked(out)?;
        }
        link.done(Cmd::Noop)?;
        let t = Instant::now();
        self.audio.block(out);
        let plain = t.elapsed().as_secs_f64();
        self.check_played(out)?;
        let add = !self.with_dc;
        let compile = match link.call(Cmd::Edit(self.id, add))? {
            Reply::Compiled(s) => s,
            _ => return Err(Error::Thread("unexpected answer".to_owned())),
        };
        let t = Instant::now();
        self.audio.block(out);
        let edit = t.elapsed().as_secs_f64();
        self.with_dc = add;
        self.check_played(out)?;
        let apply = self.audio.take_apply();
        Ok(Trial {
            plain,
            edit,
            compile,
            apply,
        })
    }

    /// Checks the block just played.
    fn check_played(&self, out: &[f32]) -> Result<(), Error> {
        check(out, self.with_dc).map_err(|what| Error::Check {
            system: self.kind.name(),
            size: self.size,
            what,
        })
    }
}

/// Runs every system of `plan` (sizes, each with its systems) for `edits` recorded edits.
/// Returns the samples and what could not be set up as asked.
pub fn measure(
    plan: &[(usize, Vec<Kind>)],
    edits: usize,
) -> Result<(Vec<Samples>, Vec<String>), Error> {
    let cores = available_cores();
    let (cmd_tx, cmd_rx) = mpsc::channel();
    let (reply_tx, reply_rx) = mpsc::channel();
    let control_thread = std::thread::Builder::new()
        .name("edit-control".into())
        .spawn(move || {
            // Apart from the audio thread's core where there are two.
            let _ = pin_current_thread(0);
            control(cmd_rx, reply_tx);
        })
        .map_err(|e| Error::Thread(format!("cannot start the control thread: {e}")))?;
    let plan = plan.to_vec();
    let audio_thread = std::thread::Builder::new()
        .name("edit-audio".into())
        .spawn(move || {
            let mut notes = Vec::new();
            if let Err(e) = pin_current_thread(cores - 1) {
                notes.push(format!("audio thread not pinned: {e}"));
            }
            if let Err(e) = set_current_thread_realtime(AUDIO_PRIORITY) {
                notes.push(format!("audio thread at normal priority: {e}"));
            }
            let link = Link {
                tx: cmd_tx,
                rx: reply_rx,
            };
            drive(&link, &plan, edits).map(|samples| (samples, notes))
        })
        .map_err(|e| Error::Thread(format!("cannot start the audio thread: {e}")))?;
    let result = audio_thread
        .join()
        .map_err(|_| Error::Thread("the audio thread panicked".to_owned()))?;
    // The audio thread's end of the line is gone with it: the control thread ends.
    control_thread
        .join()
        .map_err(|_| Error::Thread("the control thread panicked".to_owned()))?;
    let (samples, mut notes) = result?;
    notes.push(format!(
        "in-process cases: audio thread pinned to CPU {} at SCHED_FIFO {AUDIO_PRIORITY}, control \
         thread pinned to CPU 0 at normal priority; {PER_ROUND} edits per system and round, \
         systems in alternating order; each trial: 1 ms pause, {WARM_BLOCKS} untimed blocks, \
         an ordinary block and the edit's block, each after the same spin-wait",
        cores - 1
    ));
    Ok((samples, notes))
}

fn drive(link: &Link, plan: &[(usize, Vec<Kind>)], edits: usize) -> Result<Vec<Samples>, Error> {
    let mut out = vec![0.0f32; BLOCK];
    let mut all = Vec::new();
    for (size, kinds) in plan {
        let mut running = Vec::new();
        for &kind in kinds {
            let (id, audio) = match link.call(Cmd::Build(kind, *size))? {
                Reply::Built(id, audio) => (id, audio),
                _ => return Err(Error::Thread("unexpected answer".to_owned())),
            };
            let mut r = Running {
                kind,
                size: *size,
                id,
                audio,
                with_dc: false,
            };
            for _ in 0..SETTLE_BLOCKS {
                r.checked(&mut out)?;
            }
            // The first edits grow what later ones reuse: not what an edit costs.
            for _ in 0..2 {
                r.trial(link, &mut out)?;
            }
            running.push(r);
        }
        let mut samples: Vec<Samples> = kinds
            .iter()
            .map(|&kind| Samples {
                kind,
                size: *size,
                plain: Vec::with_capacity(edits),
                edit: Vec::with_capacity(edits),
                cost: Vec::with_capacity(edits),
                compile: Vec::with_capacity(edits),
                apply: Vec::new(),
            })
            .collect();
        let order: Vec<usize> = (0..running.len()).collect();
        let mut done = 0;
        let mut round = 0;
        while done < edits {
            let now = PER_ROUND.min(edits - done);
            for i in alternating(&order, round) {
                for _ in 0..now {
                    let t = running[i].trial(link, &mut out)?;
                    let s = &mut samples[i];
                    s.plain.push(t.plain);
                    s.edit.push(t.edit);
                    s.cost.push(t.edit - t.plain);
                    s.compile.push(t.compile);
                    s.apply.extend(t.apply);
                }
            }
            done += now;
            round += 1;
        }
        // The audio halves go first: Firewheel's context waits for its processor to be
        // dropped before it lets itself be.
        for r in running {
            let id = r.id;
            drop(r);
            link.done(Cmd::Drop(id))?;
        }
        all.extend(samples);
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_tells_the_oscillators_from_the_dc() {
        let quiet = vec![0.1f32; BLOCK];
        let with_dc = vec![LEVEL; BLOCK];
        assert!(check(&quiet, false).is_ok());
        assert!(check(&quiet, true).is_err());
        assert!(check(&with_dc, true).is_ok());
        assert!(check(&with_dc, false).is_err());
        assert!(
            check(&[0.0; BLOCK], false).is_err(),
            "silence is not the graph"
        );
    }
}
