//! Naming the plugin that crashed the process.
//!
//! A plugin runs in the host's process, so a plugin that dereferences a bad pointer or calls
//! `abort` takes the host down with it, and the shell shows only "Segmentation fault". With
//! [`install`] called once at start-up, a fatal signal raised on a thread that is inside a
//! plugin call first prints which plugin it was and in which phase:
//!
//! ```text
//! error: the plugin `Crash in process` (/usr/lib/clap/test.clap) crashed in process with SIGSEGV (signal 11)
//! ```
//!
//! and then dies of the signal as before (the exit status is unchanged). The hosts mark each
//! call into a plugin with [`enter`]; a signal outside every marked call goes to whatever
//! handled it before (the Rust runtime's stack-overflow report, or the default action).
//!
//! Marking a call costs two thread-local writes: it does not allocate, lock or make a system
//! call, so the audio thread's calls are marked too. `downbeat audit` learns the phase of a
//! crash another way (its child process reports each phase to the parent before it starts),
//! so only `downbeat run` and `downbeat check` install the handler.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use serde::Serialize;

/// A phase of a plugin's life, as crash reports and `downbeat audit` name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Opening the library and reading its factory or bundle.
    Load,
    /// Creating and initialising an instance.
    Create,
    /// Activating it for a sample rate and block size.
    Activate,
    /// Processing a block (the audio thread).
    Process,
    /// Deactivating and destroying it.
    Deactivate,
}

impl Phase {
    /// Every phase, in the order a plugin goes through them.
    pub const ALL: [Phase; 5] = [
        Phase::Load,
        Phase::Create,
        Phase::Activate,
        Phase::Process,
        Phase::Deactivate,
    ];

    /// The phase's name in reports: `load`, `create`, `activate`, `process`, `deactivate`.
    ///
    /// ```
    /// use downbeat_plugin::crash::Phase;
    /// assert_eq!(Phase::Process.name(), "process");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Create => "create",
            Phase::Activate => "activate",
            Phase::Process => "process",
            Phase::Deactivate => "deactivate",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a plugin is named in a crash report: `` `NAME` (PATH) ``. Never freed (a host makes
/// one or two per plugin it loads, a few dozen bytes each, like the parameter names a plugin
/// node leaks), so that a report can print it without allocating and a marked call needs no
/// borrow of the node.
///
/// ```
/// use downbeat_plugin::crash::Label;
/// let label = Label::new("Compressor", "/usr/lib/clap/comp.clap");
/// assert_eq!(label.as_str(), "`Compressor` (/usr/lib/clap/comp.clap)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label(&'static str);

impl Label {
    /// The label of plugin `name` loaded from `source` (a file, a bundle or a URI).
    pub fn new(name: &str, source: &str) -> Self {
        Self(Box::leak(format!("`{name}` ({source})").into_boxed_str()))
    }

    /// The label as printed.
    pub fn as_str(&self) -> &'static str {
        self.0
    }
}

/// What this thread is inside of, if anything.
type Inside = Option<(Label, Phase)>;

thread_local! {
    // `const`-initialised and without a destructor: reading it is a plain load from the
    // thread's TLS block, which a signal handler may do.
    static INSIDE: Cell<Inside> = const { Cell::new(None) };
}

/// The mark [`enter`] puts on the thread; dropping it puts back what was there before.
#[must_use = "the call is marked only while the scope lives"]
pub struct Scope {
    previous: Inside,
}

impl Drop for Scope {
    fn drop(&mut self) {
        INSIDE.with(|c| c.set(self.previous));
    }
}

/// Told of every phase but [`Phase::Process`] as a host enters it; see [`observe`].
static OBSERVER: OnceLock<fn(Label, Phase)> = OnceLock::new();

/// Has `observer` called with the plugin and each phase but [`Phase::Process`] that a
/// plugin host enters, on the thread that enters it, before the plugin is called:
/// `downbeat audit`'s probe and the Python package's batch workers announce them to their
/// parent, so that a crash in `create` is told from one in `activate` though both happen
/// inside one `load`, also when the plugin's crash bypasses [`install`]'s handler. Process
/// calls are not observed, so the audio thread never calls it. Only the first observer is
/// kept; returns whether this one is it.
pub fn observe(observer: fn(Label, Phase)) -> bool {
    OBSERVER.set(observer).is_ok()
}

/// Marks the calling thread as inside plugin `label` in `phase` until the returned scope is
/// dropped, after telling the [observer](observe), if any, of any phase but
/// [`Phase::Process`]. Scopes nest (a plugin created inside another's call is named while
/// it runs). Real-time safe for [`Phase::Process`].
///
/// ```
/// use downbeat_plugin::crash::{enter, inside, Label, Phase};
/// let label = Label::new("Gain", "gain.clap");
/// assert_eq!(inside(), None);
/// {
///     let _scope = enter(label, Phase::Activate);
///     assert_eq!(inside(), Some((label, Phase::Activate)));
///     assert_eq!(label.as_str(), "`Gain` (gain.clap)");
/// }
/// assert_eq!(inside(), None);
/// ```
pub fn enter(label: Label, phase: Phase) -> Scope {
    if phase != Phase::Process {
        if let Some(observer) = OBSERVER.get() {
            observer(label, phase);
        }
    }
    Scope {
        previous: INSIDE.with(|c| c.replace(Some((label, phase)))),
    }
}

/// As [`enter`], without telling the [observer](observe): for a phase a host enters on a
/// thread of its own while the plugin may go on processing elsewhere (a restart the plugin
/// asked for). The observer's announcements are one sequence for the whole process, in
/// which such a phase would stand after a later `process` and be blamed for its crash; the
/// thread is still marked, so a crash report names the phase it crashed in.
///
/// ```
/// use downbeat_plugin::crash::{enter_unannounced, inside, Label, Phase};
/// let label = Label::new("Gain", "gain.clap");
/// let _scope = enter_unannounced(label, Phase::Deactivate);
/// assert_eq!(inside(), Some((label, Phase::Deactivate)));
/// ```
pub fn enter_unannounced(label: Label, phase: Phase) -> Scope {
    Scope {
        previous: INSIDE.with(|c| c.replace(Some((label, phase)))),
    }
}

/// The plugin and phase the calling thread is inside, if any.
pub fn inside() -> Option<(Label, Phase)> {
    INSIDE.with(Cell::get)
}

/// The fatal signals a report is printed for.
const SIGNALS: [(libc::c_int, &str); 5] = [
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGABRT, "SIGABRT"),
];

static INSTALLED: AtomicBool = AtomicBool::new(false);
/// Each signal's action before [`install`] (by index in [`SIGNALS`]), which the handler hands
/// the signal on to after its report. A plain array, because a handler cannot take a lock:
/// slot `i` is written once, by `install`, right after the handler for signal `i` is in
/// place, and only read after that.
static mut PREVIOUS: [Option<libc::sigaction>; 5] = [None; 5];

/// Installs the handler that names the crashing plugin (see the module docs). Idempotent.
///
/// # Errors
/// The OS error of a `sigaction` call that failed; the handlers installed before it stay.
pub fn install() -> std::io::Result<()> {
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    for (i, &(signal, _)) in SIGNALS.iter().enumerate() {
        // SAFETY: a zeroed `sigaction` is a valid "no flags, empty mask" value, filled in
        // below; `sigaction` only reads `action` and writes `old`, both live locals.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, &action, &mut old) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // A signal `i` that comes before this write finds the slot empty and gets the
            // default action, which is what `old` is at start-up but for the Rust runtime's
            // stack-overflow report.
            PREVIOUS[i] = Some(old);
        }
    }
    Ok(())
}

/// Writes all of `bytes` to stderr with `write(2)`, the one output call a signal handler may
/// make.
fn write_all(mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a live slice; `write` reads at most `len` bytes of it.
        let n = unsafe { libc::write(libc::STDERR_FILENO, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

/// Writes `n` in decimal (a signal number) without allocating.
fn write_number(mut n: u32) {
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    write_all(&digits[at..]);
}

extern "C" fn on_fatal(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    let index = SIGNALS.iter().position(|&(s, _)| s == signal);
    let Some((label, phase)) = INSIDE.with(Cell::get) else {
        // Not a plugin's: as if this handler were not there.
        // SAFETY: the slot was written by `install` before this handler could run for
        // its signal, and is never written again.
        let previous = index.and_then(|i| unsafe { PREVIOUS[i] });
        match previous {
            Some(old) if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN => {
                if old.sa_flags & libc::SA_SIGINFO != 0 {
                    // SAFETY: the previous handler was installed with SA_SIGINFO, so it has
                    // this signature; it gets the arguments the kernel gave this one.
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        unsafe { std::mem::transmute(old.sa_sigaction) };
                    f(signal, info, context);
                } else {
                    // SAFETY: as above, for a handler installed without SA_SIGINFO.
                    let f: extern "C" fn(libc::c_int) =
                        unsafe { std::mem::transmute(old.sa_sigaction) };
                    f(signal);
                }
            }
            _ => die_of(signal, info),
        }
        return;
    };
    write_all(b"error: the plugin ");
    write_all(label.as_str().as_bytes());
    write_all(b" crashed in ");
    write_all(phase.name().as_bytes());
    write_all(b" with ");
    write_all(index.map_or("a fatal signal", |i| SIGNALS[i].1).as_bytes());
    write_all(b" (signal ");
    write_number(signal as u32);
    write_all(b")\n");
    // The Rust runtime's handler is not chained here: for a fault that is not a stack
    // overflow it only returns, and for a signal the plugin raised that would let the
    // plugin carry on.
    die_of(signal, info);
}

/// Makes the process end with `signal` once the handler returns: its action goes back to
/// the default, so a fault dies when the faulting instruction runs again, and a signal that
/// was raised or sent (which returning would not repeat) is raised again, pending until
/// the handler returns.
fn die_of(signal: libc::c_int, info: *mut libc::siginfo_t) {
    // SAFETY: `signal` and `raise` are async-signal-safe; `info` is the kernel's siginfo
    // for this delivery (SA_SIGINFO), valid for the handler's duration.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        if info.is_null() || (*info).si_code <= 0 {
            libc::raise(signal);
        }
    }
}
