//! The real-time audit of a plugin: its process call, block after block, under the guard.
//!
//! [`audit`] takes any [`Node`] (a CLAP or an LV2 plugin, or anything else), and runs
//! [`Node::process`] `blocks` times, each call inside its own
//! [`downbeat_rt::guard::check_with`] scope, while it moves every live parameter (several
//! changes per block, at different frames) and, for an instrument, plays notes. Each
//! callback gets a line in the [`AuditReport`]: allocations and frees with their sizes,
//! system calls by name, blocking calls (locks), context switches and page faults.
//!
//! # What it can see
//!
//! * **System calls**, every one the audio thread makes, by name: the guard traps them with
//!   a seccomp filter on its own thread (Linux x86-64). That includes an allocator growing
//!   its heap (`brk`, `mmap`), file and socket I/O, and a contended lock's `futex` wait.
//! * **Page faults and voluntary context switches**, from `getrusage` of the thread.
//! * **Allocations and frees through Rust's global allocator**, when the program installs
//!   the guard's counting allocator ([`downbeat_rt::install_guard_allocator!`]).
//! * **`malloc` and friends**, only through a [`MallocProbe`]: a plugin does not allocate
//!   through Downbeat's Rust allocator (a Rust plugin has its own copy of the standard
//!   library, which calls libc's `malloc`; a C or C++ plugin calls `malloc` or `operator
//!   new`, which calls `malloc`). The `downbeat` executable defines `malloc`, `free`,
//!   `calloc`, `realloc`, `reallocarray`, `posix_memalign`, `aligned_alloc` and `memalign`
//!   itself; a plugin loaded with `dlopen` binds to those (the executable comes first in
//!   symbol lookup), and they count the calls made on the audited thread while it is armed
//!   before passing them on to glibc. An allocation served from the allocator's free lists
//!   makes no system call, so without the probe it would go unseen.
//!
//! # What it cannot see
//!
//! * An uncontended lock (one compare-and-swap, no system call) taken by the plugin;
//!   contended ones show as `futex`.
//! * Allocations by a plugin that links its own allocator statically (jemalloc, say), or
//!   calls `valloc`, `pvalloc` or `mmap` directly: the heap probe misses them, though any
//!   system call they make is still caught.
//! * Work on other threads: a plugin that hands its work to a thread of its own is audited
//!   only for what it does on the audio thread.
//! * Paths the blocks did not take: the audit sees what these blocks, these parameter moves
//!   and these notes made the plugin do, not every path it has.
//!
//! The first callback of a CLAP plugin includes its `start_processing`, which CLAP makes an
//! audio-thread call: what a plugin does there is what it would do on a real audio thread.
//!
//! [`list`] names the plugins a CLAP file or an LV2 bundle holds, without creating them, for
//! the audit of a whole folder (`downbeat audit DIR`).
//!
//! ```
//! use downbeat_nodes::Gain;
//! use downbeat_plugin::audit::{audit, AuditOptions};
//!
//! // The guard's counting allocator sees Rust allocations; `downbeat audit` adds a probe
//! // below it for a plugin's own `malloc` calls.
//! downbeat_rt::install_guard_allocator!();
//!
//! # fn main() {
//! let opts = AuditOptions { blocks: 20, ..AuditOptions::default() };
//! let mut node = Gain::new(2, 0.5); // any Node: a ClapNode, an Lv2Node, ...
//! let report = audit("gain", &mut node, &opts, None);
//! print!("{}", report.table());
//! assert_eq!(report.callbacks.len(), 20);
//! # #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
//! assert!(report.clean, "{}", report.table());
//! # }
//! ```

pub mod list;
mod table;

pub use table::write_table;

use std::fmt::Write as _;

use downbeat_graph::{AudioMut, AudioRef, Node, NoteEvent, ParamKind, ProcessContext};
use downbeat_rt::guard::{self, Options, Report, Tracker, Violation};
use serde::Serialize;

/// How the audit drives the plugin.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AuditOptions {
    /// Process calls to audit.
    pub blocks: usize,
    /// Frames per call.
    pub block: usize,
    /// Sample rate the plugin is activated at.
    pub sample_rate: u32,
}

impl Default for AuditOptions {
    /// 200 blocks of 256 frames at 48 kHz.
    fn default() -> Self {
        Self {
            blocks: 200,
            block: 256,
            sample_rate: 48000,
        }
    }
}

/// Heap activity a [`MallocProbe`] saw in one callback.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MallocActivity {
    /// `malloc`, `calloc`, `realloc` (to a new size), `posix_memalign`, `aligned_alloc`,
    /// `memalign` and `reallocarray` calls.
    pub allocations: u64,
    /// Bytes they asked for.
    pub bytes: u64,
    /// The first sizes asked for, in order (at most [`MALLOC_SIZES`]).
    pub sizes: Vec<usize>,
    /// `free` calls of a non-null pointer, and `realloc` calls that move a block.
    pub frees: u64,
}

/// Sizes a [`MallocCounts`] keeps.
pub const MALLOC_SIZES: usize = 16;

/// What a [`MallocProbe`] counted, in a fixed-size value so that handing it over does not
/// allocate inside the guarded scope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MallocCounts {
    /// Allocation calls.
    pub allocations: u64,
    /// Bytes they asked for.
    pub bytes: u64,
    /// Frees of a non-null pointer (a `realloc` that moves counts as one).
    pub frees: u64,
    /// The first sizes asked for; `sizes_len` of them are valid.
    pub sizes: [usize; MALLOC_SIZES],
    /// How many of `sizes` are valid.
    pub sizes_len: usize,
}

impl From<MallocCounts> for MallocActivity {
    fn from(c: MallocCounts) -> Self {
        Self {
            allocations: c.allocations,
            bytes: c.bytes,
            sizes: c.sizes[..c.sizes_len.min(MALLOC_SIZES)].to_vec(),
            frees: c.frees,
        }
    }
}

/// Counts libc-level allocations on the thread that arms it; see the module documentation.
/// The `downbeat` executable has one; a library cannot, as only the executable's symbols
/// take precedence over libc's for the plugins it loads.
pub trait MallocProbe: Sync {
    /// Starts counting calls made by the current thread (and resets the counts). Must not
    /// allocate.
    fn arm(&self);
    /// Stops counting and returns what was counted since [`arm`](MallocProbe::arm). Called
    /// on the same thread. Must not allocate.
    fn disarm(&self) -> MallocCounts;
}

/// Allocations or frees through Rust's global allocator in one callback.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HeapCount {
    /// How many.
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
    /// The first sizes, in order (at most 64).
    pub sizes: Vec<usize>,
}

/// A named count (a system call, a blocking call).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Named {
    /// The name (`futex`, `brk`, `write`, ...).
    pub name: String,
    /// How many times.
    pub count: u64,
}

/// What one process call did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Callback {
    /// The call's number, from 0.
    pub index: usize,
    /// Allocations through Rust's global allocator (when tracked).
    pub allocations: HeapCount,
    /// Frees through Rust's global allocator (when tracked).
    pub frees: HeapCount,
    /// Allocations and frees seen by the malloc probe (when there is one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub malloc: Option<MallocActivity>,
    /// System calls not allowed on an audio thread, by name.
    pub syscalls: Vec<Named>,
    /// Blocking calls (locks that announce themselves).
    pub blocking: Vec<Named>,
    /// Minor and major page faults.
    pub page_faults: u64,
    /// Times the thread blocked.
    pub voluntary_switches: u64,
    /// The number of violating events in the call.
    pub violations: u64,
}

/// The audit of one plugin: a line per callback, totals, and what was watched.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AuditReport {
    /// The plugin, as named on the command line.
    pub plugin: String,
    /// Process calls audited.
    pub blocks: usize,
    /// Frames per call.
    pub block: usize,
    /// Sample rate.
    pub sample_rate: u32,
    /// The live parameters moved during the audit.
    pub params_moved: Vec<String>,
    /// Note events sent (0 for an effect).
    pub notes_sent: u64,
    /// Trackers that could not run (the report is then incomplete and cannot be clean).
    pub missing_trackers: Vec<String>,
    /// Notes from the guard (why a tracker did not run, say).
    pub notes: Vec<String>,
    /// Every callback, in order.
    pub callbacks: Vec<Callback>,
    /// Violating events over all callbacks.
    pub violations: u64,
    /// True when every tracker ran and no callback did anything an audio thread must not.
    pub clean: bool,
}

/// A deterministic, non-silent test signal (a 32-bit LCG), so that plugins that skip work
/// on silence still work.
fn fill_noise(buf: &mut [f32], state: &mut u32) {
    for s in buf {
        *state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        *s = (*state >> 8) as f32 / (1u32 << 24) as f32 - 0.5;
    }
}

/// The value of parameter `p` at change `k`: sweeps the range up and down, with a different
/// phase for each parameter, touching both ends.
fn sweep(min: f64, max: f64, p: usize, k: usize) -> f32 {
    const STEPS: usize = 16;
    let i = (k + 3 * p) % (2 * STEPS);
    let t = if i <= STEPS { i } else { 2 * STEPS - i } as f64 / STEPS as f64;
    (min + (max - min) * t) as f32
}

/// Runs the audit. `name` is how the report names the plugin; `probe`, when given, counts
/// libc-level allocations (see [`MallocProbe`]). The node should be freshly loaded: its
/// first audited call is its first call.
pub fn audit(
    name: &str,
    node: &mut dyn Node,
    opts: &AuditOptions,
    probe: Option<&dyn MallocProbe>,
) -> AuditReport {
    let frames = opts.block.max(1);
    let (n_in, n_out) = (node.input_channels(), node.output_channels());
    let mut input = vec![0.0f32; n_in.max(1) * frames];
    let mut output = vec![0.0f32; n_out.max(1) * frames];
    let mut noise = 1u32;
    let live: Vec<(usize, f64, f64, String)> = node
        .params()
        .iter()
        .enumerate()
        .filter(|(_, s)| s.live)
        .filter_map(|(i, s)| match s.kind {
            ParamKind::Float { min, max, .. } => Some((i, min, max, s.name.to_string())),
            _ => None,
        })
        .collect();
    let offsets = node.takes_param_offsets();
    let instrument = node.plays_notes();
    let options = Options::new();
    let mut callbacks = Vec::with_capacity(opts.blocks);
    let mut missing = Vec::new();
    let mut notes = Vec::new();
    let mut notes_sent = 0;
    for b in 0..opts.blocks {
        fill_noise(&mut input, &mut noise);
        let ctx = ProcessContext::new(opts.sample_rate, frames, (b * frames) as u64);
        let note_events: &[(usize, NoteEvent)] = match (instrument, b % 8) {
            (true, 0) => &[
                (
                    0,
                    NoteEvent::On {
                        channel: 0,
                        note: 60.0,
                        velocity: 0.8,
                    },
                ),
                (
                    1,
                    NoteEvent::On {
                        channel: 0,
                        note: 67.0,
                        velocity: 0.5,
                    },
                ),
            ],
            (true, 4) => &[
                (
                    0,
                    NoteEvent::Off {
                        channel: 0,
                        note: 60.0,
                    },
                ),
                (
                    0,
                    NoteEvent::Off {
                        channel: 0,
                        note: 67.0,
                    },
                ),
                (
                    1,
                    NoteEvent::PitchBend {
                        channel: 0,
                        value: 0.25,
                    },
                ),
            ],
            _ => &[],
        };
        notes_sent += note_events.len() as u64;
        let (malloc, report): (Option<MallocCounts>, Report) = guard::check_with(&options, || {
            if let Some(p) = probe {
                p.arm();
            }
            // Parameter changes and notes are audio-thread calls too: inside the scope.
            for (j, (index, min, max, _)) in live.iter().enumerate() {
                for k in 0..4 {
                    let value = sweep(*min, *max, j, 4 * b + k);
                    if offsets {
                        node.set_param_at(k * frames / 4, *index, value);
                    } else {
                        node.set_param(*index, value);
                    }
                }
            }
            for &(frame, event) in note_events {
                let _ = node.note(frame.min(frames - 1), event);
            }
            node.process(
                &ctx,
                AudioRef::new(&input, n_in, frames, frames),
                AudioMut::new(&mut output, n_out, frames, frames),
            );
            probe.map(|p| p.disarm())
        });
        if b == 0 {
            missing = report.missing_trackers();
            // Why a tracker did not run, then the guard's other notes.
            for v in report.violations() {
                if let Violation::Untracked(why) = v {
                    notes.push((Some(why.tracker()), why.to_string()));
                }
            }
            notes.extend(report.notes.iter().map(|n| (None, n.to_string())));
        }
        callbacks.push(callback(
            b,
            &report,
            malloc.map(MallocActivity::from),
            probe.is_some(),
        ));
    }
    // With a probe, the heap is watched below Rust's allocator, which it also sees (Rust's
    // allocator calls malloc): the guard's own heap tracker is not needed.
    if probe.is_some() {
        missing.retain(|t| *t != Tracker::Allocations);
        notes.retain(|(tracker, _)| *tracker != Some(Tracker::Allocations));
    }
    let violations = callbacks.iter().map(|c| c.violations).sum();
    AuditReport {
        plugin: name.to_string(),
        blocks: opts.blocks,
        block: frames,
        sample_rate: opts.sample_rate,
        params_moved: live.into_iter().map(|(_, _, _, n)| n).collect(),
        notes_sent,
        missing_trackers: missing.iter().map(|t| t.name().to_string()).collect(),
        notes: notes.into_iter().map(|(_, n)| n).collect(),
        clean: violations == 0 && missing.is_empty(),
        callbacks,
        violations,
    }
}

/// One callback's line, from the guard's typed violations (its text is never parsed).
fn callback(index: usize, r: &Report, malloc: Option<MallocActivity>, probed: bool) -> Callback {
    let heap = |h: &guard::HeapActivity| HeapCount {
        count: h.count,
        bytes: h.bytes,
        sizes: h.sizes.clone(),
    };
    // The heap as the guard saw it is shown even when a probe counts it.
    let mut line = Callback {
        index,
        allocations: heap(&r.allocations),
        frees: heap(&r.frees),
        malloc: None,
        syscalls: Vec::new(),
        blocking: Vec::new(),
        page_faults: 0,
        voluntary_switches: 0,
        violations: 0,
    };
    let named = |name: &str, count: u64| Named {
        name: name.to_string(),
        count,
    };
    for v in r.violations() {
        match &v {
            // Rust's allocator goes through malloc, so a probe saw those calls too: count
            // the heap once, from the probe.
            Violation::Allocation(_) | Violation::Free(_) if probed => continue,
            Violation::Syscall(s) => line.syscalls.push(named(&s.name, s.count)),
            Violation::OtherSyscalls { count } => line.syscalls.push(named("other", *count)),
            Violation::Blocking(b) => line.blocking.push(named(b.name, b.count)),
            Violation::ContextSwitch { count } => line.voluntary_switches = *count,
            Violation::PageFault { minor, major } => line.page_faults = minor + major,
            // Allocations and frees are on the line already; a tracker that did not run is
            // reported once for the audit, from the first callback.
            _ => {}
        }
        line.violations += v.count();
    }
    if let Some(m) = &malloc {
        line.violations += m.allocations + m.frees;
    }
    line.malloc = malloc;
    line
}

fn sizes(list: &[usize]) -> String {
    let shown: Vec<String> = list.iter().take(4).map(|s| s.to_string()).collect();
    let more = if list.len() > 4 { ", ..." } else { "" };
    format!("[{}{more}]", shown.join(", "))
}

impl Callback {
    /// One cell per kind of finding, `-` for none.
    fn cells(&self) -> [String; 5] {
        let (allocs, frees) = match &self.malloc {
            Some(m) => (
                (m.allocations, m.bytes, m.sizes.clone()),
                (m.frees, 0, Vec::<usize>::new()),
            ),
            None => (
                (
                    self.allocations.count,
                    self.allocations.bytes,
                    self.allocations.sizes.clone(),
                ),
                (self.frees.count, self.frees.bytes, Vec::new()),
            ),
        };
        let alloc = if allocs.0 == 0 {
            "-".into()
        } else {
            format!("{} ({} B {})", allocs.0, allocs.1, sizes(&allocs.2))
        };
        let free = if frees.0 == 0 {
            "-".into()
        } else {
            frees.0.to_string()
        };
        let list = |v: &[Named]| {
            if v.is_empty() {
                "-".to_string()
            } else {
                v.iter()
                    .map(|n| format!("{} x{}", n.name, n.count))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let faults = if self.page_faults == 0 {
            "-".into()
        } else {
            self.page_faults.to_string()
        };
        [
            alloc,
            free,
            list(&self.blocking),
            list(&self.syscalls),
            faults,
        ]
    }
}

impl AuditReport {
    /// The human-readable table: a row per callback that did something, runs of clean
    /// callbacks folded into one row, then the verdict.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "audit of {}: {} callbacks of {} frames at {} Hz",
            self.plugin, self.blocks, self.block, self.sample_rate
        );
        let moved = if self.params_moved.is_empty() {
            "none".to_string()
        } else {
            self.params_moved.join(", ")
        };
        let _ = writeln!(
            out,
            "parameters moved: {moved}; notes sent: {}",
            self.notes_sent
        );
        let head = [
            "callback",
            "allocations",
            "frees",
            "locks",
            "system calls",
            "page faults",
        ];
        let mut rows: Vec<[String; 6]> = Vec::new();
        let mut clean_from: Option<usize> = None;
        let flush = |rows: &mut Vec<[String; 6]>, from: Option<usize>, to: usize| {
            if let Some(f) = from {
                let range = if f + 1 == to {
                    f.to_string()
                } else {
                    format!("{f}-{}", to - 1)
                };
                rows.push([
                    range,
                    "clean".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                    "".into(),
                ]);
            }
        };
        // Consecutive callbacks that did the same are one row.
        let mut same: Option<(usize, usize, [String; 5])> = None;
        let close = |rows: &mut Vec<[String; 6]>, run: Option<(usize, usize, [String; 5])>| {
            if let Some((from, to, [a, f, l, s, p])) = run {
                let range = if from == to {
                    from.to_string()
                } else {
                    format!("{from}-{to}")
                };
                rows.push([range, a, f, l, s, p]);
            }
        };
        for c in &self.callbacks {
            if c.violations == 0 {
                close(&mut rows, same.take());
                clean_from.get_or_insert(c.index);
                continue;
            }
            flush(&mut rows, clean_from.take(), c.index);
            let cells = c.cells();
            match &mut same {
                Some((_, to, prev)) if *prev == cells => *to = c.index,
                _ => {
                    close(&mut rows, same.take());
                    same = Some((c.index, c.index, cells));
                }
            }
        }
        close(&mut rows, same);
        flush(&mut rows, clean_from, self.callbacks.len());
        write_table(&mut out, head, &rows);
        for t in &self.missing_trackers {
            let _ = writeln!(out, "not watched: {t}");
        }
        for n in &self.notes {
            let _ = writeln!(out, "note: {n}");
        }
        let bad = self.callbacks.iter().filter(|c| c.violations > 0).count();
        let verdict = if self.clean {
            "clean".to_string()
        } else if self.violations == 0 {
            "incomplete (not every tracker ran)".to_string()
        } else {
            format!(
                "{} violations in {bad} of {} callbacks",
                self.violations, self.blocks
            )
        };
        let _ = writeln!(out, "result: {verdict}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node that asks for its process id in every call: one system call an audio thread
    /// must not make.
    struct Getpid;

    impl Node for Getpid {
        fn input_channels(&self) -> usize {
            0
        }
        fn output_channels(&self) -> usize {
            1
        }
        fn process(&mut self, _: &ProcessContext, _: AudioRef<'_>, mut output: AudioMut<'_>) {
            let pid = std::process::id();
            output.channel_mut(0)[0] = std::hint::black_box(pid) as f32 * 0.0;
        }
    }

    /// Counts two allocations and a free per call, as a probe would.
    struct TwoAllocations;

    impl MallocProbe for TwoAllocations {
        fn arm(&self) {}
        fn disarm(&self) -> MallocCounts {
            MallocCounts {
                allocations: 2,
                bytes: 48,
                frees: 1,
                sizes: [16; MALLOC_SIZES],
                sizes_len: 2,
            }
        }
    }

    const OPTS: AuditOptions = AuditOptions {
        blocks: 3,
        block: 64,
        sample_rate: 48000,
    };

    /// This test binary has no GuardAlloc: without a probe the audit says allocations were
    /// not watched, and why; each callback's system call is on its line.
    #[test]
    fn each_callback_lists_its_typed_violations_and_the_unwatched_heap_is_said() {
        let report = audit("getpid", &mut Getpid, &OPTS, None);
        assert_eq!(report.missing_trackers, ["allocations"]);
        assert_eq!(report.notes.len(), 1, "{:?}", report.notes);
        assert!(report.notes[0].contains("install_guard_allocator!"));
        assert!(!report.clean);
        for c in &report.callbacks {
            let getpid: Vec<_> = c.syscalls.iter().filter(|s| s.name == "getpid").collect();
            assert_eq!(getpid.len(), 1, "{c:?}");
            assert_eq!(getpid[0].count, 1);
            assert!(c.violations >= 1, "{c:?}");
        }
    }

    /// With a probe the heap is watched below Rust's allocator: the guard's missing heap
    /// tracker and its note are dropped, and the probe's counts are violations.
    #[test]
    fn a_probe_stands_in_for_the_heap_tracker() {
        let report = audit("getpid", &mut Getpid, &OPTS, Some(&TwoAllocations));
        assert!(report.missing_trackers.is_empty(), "{report:?}");
        assert!(
            report.notes.iter().all(|n| !n.contains("allocations")),
            "{:?}",
            report.notes
        );
        for c in &report.callbacks {
            assert_eq!(c.malloc.as_ref().unwrap().allocations, 2);
            // The getpid, and the probe's two allocations and one free.
            assert!(c.violations >= 4, "{c:?}");
        }
        assert!(
            report.table().contains("2 (48 B [16, 16])"),
            "{}",
            report.table()
        );
    }
}
