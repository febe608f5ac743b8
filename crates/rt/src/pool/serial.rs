//! The pool on `wasm32`: no threads (a browser's audio worklet has one), so a [`WorkList`]
//! runs to completion on the calling thread, in the order the list hands out its items.

use super::{worker::work_until_done, PoolConfig, WorkList};

/// The serial stand-in for the threaded pool: the same API, no workers.
///
/// ```
/// # use downbeat_rt::pool::{Pool, PoolConfig};
/// let pool = Pool::new(PoolConfig::default());
/// assert_eq!(pool.workers(), 0);
/// ```
pub struct Pool {
    notes: Vec<String>,
}

impl Pool {
    /// A pool without workers; asking for any is noted in [`notes`](Pool::notes).
    pub fn new(config: PoolConfig) -> Self {
        let notes = match config.workers {
            Some(0) | None => Vec::new(),
            Some(n) => vec![format!("{n} workers asked for: wasm32 runs serially")],
        };
        Self { notes }
    }

    /// Always 0.
    pub fn workers(&self) -> usize {
        0
    }

    /// What could not be set up as asked.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Always 0: there is no worker to wake.
    pub fn wakes(&self) -> u64 {
        0
    }

    /// Processes `work` to completion on the calling thread.
    pub fn run<W: WorkList>(&self, work: &W) {
        work_until_done(work, None, 0);
    }
}
