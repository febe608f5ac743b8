//! [`LogRing`]: the messages a plugin logs from the audio thread, kept in fixed slots until
//! the main thread prints them.
//!
//! Printing is a system call and formatting may allocate, neither of which the audio thread
//! may do; so a message logged there is copied (truncated to [`MESSAGE_BYTES`]) into one of
//! [`SLOTS`] slots allocated when the node is built, and printed to stderr when the main
//! thread next drains the ring. Messages logged on any other thread are printed at once.
//! Every slot is atomics only: any number of threads may write at once (each claims a free
//! slot with a compare-and-swap), and a message finding every slot full is counted as
//! dropped, never waited for.

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

use clack_extensions::log::LogSeverity;

/// How a plugin's log message is printed.
pub(crate) fn log_line(plugin: &str, severity: &str, message: &str) -> String {
    format!("[downbeat] clap {plugin}: {severity}: {message}")
}

/// The log of one plugin instance: its ring of messages from the audio thread, and how to
/// print them with the plugin's name.
pub(crate) struct LogSink {
    /// The plugin's name, for the lines (its other log lines too).
    pub(crate) name: String,
    pub(crate) ring: LogRing,
    /// The ring's count of lost messages when a drain last said how many were lost.
    told: AtomicU64,
}

impl LogSink {
    pub(crate) fn new(name: String) -> Self {
        Self {
            name,
            ring: LogRing::new(),
            told: AtomicU64::new(0),
        }
    }

    /// Takes the messages logged from the audio thread, as the lines the host prints, and
    /// a last line saying how many were lost to a full ring since the last time, if any
    /// were, so that a chatty plugin's messages never vanish without a word. Off the audio
    /// thread (it allocates).
    pub(crate) fn take_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .ring
            .drain()
            .into_iter()
            .map(|m| {
                let severity = LogSeverity::from_raw(i32::from(m.severity))
                    .map_or_else(|| m.severity.to_string(), |s| s.to_string());
                log_line(&self.name, &severity, &m.text)
            })
            .collect();
        let dropped = self.ring.dropped();
        let told = self.told.swap(dropped, Ordering::Relaxed);
        if dropped > told {
            lines.push(format!(
                "[downbeat] clap {}: {} more message(s) logged from the audio thread were \
                 lost: all {SLOTS} slots of the node's log ring were waiting to be printed",
                self.name,
                dropped - told
            ));
        }
        lines
    }

    /// Prints [`take_lines`](Self::take_lines) to stderr, in one write per line.
    pub(crate) fn print(&self) {
        for line in self.take_lines() {
            eprintln!("{line}");
        }
    }
}

/// Slots in a node's ring: messages the audio thread can log between two drains.
pub(crate) const SLOTS: usize = 64;
/// Bytes of a message a slot keeps; the rest is cut.
pub(crate) const MESSAGE_BYTES: usize = 240;

const FREE: u8 = 0;
const WRITING: u8 = 1;
const READY: u8 = 2;
const READING: u8 = 3;

/// One message's room.
struct Slot {
    state: AtomicU8,
    severity: AtomicU8,
    /// Order of writing, so that the drain prints in the order logged.
    seq: AtomicU64,
    len: AtomicUsize,
    bytes: [AtomicU8; MESSAGE_BYTES],
}

impl Slot {
    fn new() -> Self {
        Self {
            state: AtomicU8::new(FREE),
            severity: AtomicU8::new(0),
            seq: AtomicU64::new(0),
            len: AtomicUsize::new(0),
            bytes: std::array::from_fn(|_| AtomicU8::new(0)),
        }
    }
}

/// A message taken out of the ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Logged {
    /// CLAP's severity number.
    pub(crate) severity: u8,
    /// The text, cut at [`MESSAGE_BYTES`] (at a character boundary).
    pub(crate) text: String,
}

/// The ring of one plugin instance.
pub(crate) struct LogRing {
    slots: Box<[Slot]>,
    next_seq: AtomicU64,
    dropped: AtomicU64,
}

impl LogRing {
    pub(crate) fn new() -> Self {
        Self {
            slots: (0..SLOTS).map(|_| Slot::new()).collect(),
            next_seq: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// Keeps a message; real-time safe (atomics only, bounded steps). False when every slot
    /// was taken (the message is counted in [`dropped`](Self::dropped)).
    pub(crate) fn push(&self, severity: u8, text: &str) -> bool {
        for slot in self.slots.iter() {
            if slot
                .state
                .compare_exchange(FREE, WRITING, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            let mut len = text.len().min(MESSAGE_BYTES);
            while !text.is_char_boundary(len) {
                len -= 1;
            }
            for (dst, &b) in slot.bytes.iter().zip(&text.as_bytes()[..len]) {
                dst.store(b, Ordering::Relaxed);
            }
            slot.len.store(len, Ordering::Relaxed);
            slot.severity.store(severity, Ordering::Relaxed);
            slot.seq.store(
                self.next_seq.fetch_add(1, Ordering::Relaxed),
                Ordering::Relaxed,
            );
            slot.state.store(READY, Ordering::Release);
            return true;
        }
        self.dropped.fetch_add(1, Ordering::Relaxed);
        false
    }

    /// Takes every message written so far, oldest first, and frees their slots. Main thread
    /// (it allocates).
    pub(crate) fn drain(&self) -> Vec<Logged> {
        let mut out = Vec::new();
        for slot in self.slots.iter() {
            if slot
                .state
                .compare_exchange(READY, READING, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                continue;
            }
            let len = slot.len.load(Ordering::Relaxed);
            let bytes: Vec<u8> = slot.bytes[..len]
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect();
            out.push((
                slot.seq.load(Ordering::Relaxed),
                Logged {
                    severity: slot.severity.load(Ordering::Relaxed),
                    text: String::from_utf8_lossy(&bytes).into_owned(),
                },
            ));
            slot.state.store(FREE, Ordering::Release);
        }
        out.sort_by_key(|(seq, _)| *seq);
        out.into_iter().map(|(_, m)| m).collect()
    }

    /// Messages lost because the ring was full.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_come_out_in_order_cut_at_a_character_boundary_and_overflow_is_counted() {
        let ring = LogRing::new();
        assert!(ring.push(2, "first"));
        // One byte, then two-byte characters: byte MESSAGE_BYTES falls inside one.
        let long = format!("a{}", "é".repeat(MESSAGE_BYTES));
        assert!(ring.push(3, &long));
        let got = ring.drain();
        assert_eq!(
            got[0],
            Logged {
                severity: 2,
                text: "first".into()
            }
        );
        assert_eq!(
            got[1].text,
            format!("a{}", "é".repeat(MESSAGE_BYTES / 2 - 1))
        );
        assert!(ring.drain().is_empty());
        for i in 0..SLOTS {
            assert!(ring.push(1, &i.to_string()));
        }
        assert!(!ring.push(1, "one too many"));
        assert_eq!(ring.dropped(), 1);
        assert_eq!(ring.drain().len(), SLOTS);
    }
}
