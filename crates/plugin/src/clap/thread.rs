//! Which thread is which, for the `thread-check` host extension, without a system call or an
//! allocation (a plugin may ask from its `process`).
//!
//! * The **main thread** of an instance is the thread that created its host: the host keeps
//!   that thread's [`ThreadMark`], the address of a thread-local, which no two live threads
//!   share.
//! * The **audio thread** is whichever thread is inside the node's `process` (or the plugin's
//!   `start_processing` / `stop_processing`): a thread-local depth counter is raised around
//!   those calls by [`AudioScope`], so with a parallel schedule every worker that is
//!   processing a plugin is an audio thread while it does.

use std::cell::Cell;

thread_local! {
    /// Its address tells threads apart; const-initialised, so touching it never allocates.
    static MARK: u8 = const { 0 };
    /// How many plugin audio-thread calls this thread is inside.
    static AUDIO_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// A thread's identity: the address of its [`MARK`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ThreadMark(usize);

impl ThreadMark {
    /// The calling thread's mark.
    pub(crate) fn current() -> Self {
        ThreadMark(MARK.with(|m| m as *const u8 as usize))
    }
}

/// True on a thread inside a plugin's audio-thread call.
pub(crate) fn in_audio_thread() -> bool {
    AUDIO_DEPTH.with(Cell::get) > 0
}

/// Marks the calling thread as the audio thread until dropped.
pub(crate) struct AudioScope(());

impl AudioScope {
    pub(crate) fn enter() -> Self {
        AUDIO_DEPTH.with(|d| d.set(d.get() + 1));
        AudioScope(())
    }
}

impl Drop for AudioScope {
    fn drop(&mut self) {
        AUDIO_DEPTH.with(|d| d.set(d.get() - 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_differ_between_threads_and_the_scope_nests() {
        let here = ThreadMark::current();
        assert_eq!(here, ThreadMark::current());
        let there = std::thread::spawn(ThreadMark::current).join().unwrap();
        assert_ne!(here, there);
        assert!(!in_audio_thread());
        {
            let _outer = AudioScope::enter();
            let _inner = AudioScope::enter();
            assert!(in_audio_thread());
            assert!(!std::thread::spawn(in_audio_thread).join().unwrap());
        }
        assert!(!in_audio_thread());
    }
}
