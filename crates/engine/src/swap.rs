//! Hot swap: a control thread sends a newly compiled [`Schedule`] to the running engine,
//! which swaps it in at the next block boundary and sends the old one off to be freed.

use std::fmt;

use downbeat_graph::Schedule;
use downbeat_ring::{Consumer, Producer, RingBuffer};
use downbeat_rt::reclaim::{self, Collector, Retirer};

/// The control thread's end of a hot-swap channel, made by
/// [`Engine::swap_channel`](crate::Engine::swap_channel).
pub struct ScheduleSender {
    tx: Producer<usize>,
    format: (f32, usize, usize),
}

/// Why a schedule was not sent. The schedule comes back in every case.
pub enum SwapError {
    /// Its sample rate, block size or channel count differs from the engine's.
    Format(Box<Schedule>),
    /// The engine has not picked up the schedules sent before yet.
    Full(Box<Schedule>),
}

impl fmt::Debug for SwapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string())
    }
}

impl fmt::Display for SwapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwapError::Format(_) => f.write_str(
                "the new schedule's sample rate, block size or channel count differs from the engine's",
            ),
            SwapError::Full(_) => {
                f.write_str("the engine has not yet taken the schedules sent before")
            }
        }
    }
}

impl std::error::Error for SwapError {}

fn format_of(s: &Schedule) -> (f32, usize, usize) {
    let c = s.config();
    (c.sample_rate, c.max_block, s.channels())
}

impl ScheduleSender {
    /// Queues `schedule` to replace the running one at the next block boundary. Never
    /// blocks; when the engine is behind, the schedule comes back in [`SwapError::Full`].
    pub fn send(&mut self, schedule: Schedule) -> Result<(), SwapError> {
        let schedule = Box::new(schedule);
        if format_of(&schedule) != self.format {
            return Err(SwapError::Format(schedule));
        }
        if self.tx.is_full() {
            return Err(SwapError::Full(schedule));
        }
        let addr = Box::into_raw(schedule) as usize;
        if self.tx.push(addr).is_err() {
            unreachable!("only this producer fills the queue, and it had room");
        }
        Ok(())
    }
}

/// The engine's end: pending schedules and where old ones go.
pub(crate) struct Swapper {
    rx: Consumer<usize>,
    retirer: Retirer,
    pub(crate) swaps: u64,
}

pub(crate) fn channel(current: &Schedule, capacity: usize) -> (ScheduleSender, Swapper, Collector) {
    let (tx, rx) = RingBuffer::new(capacity);
    // One more than the schedules in flight, so a swap never finds the reclaim queue full
    // while the collector keeps up; if it does not, swaps wait (see `take`).
    let (retirer, collector) = reclaim::queue(capacity + 1);
    (
        ScheduleSender {
            tx,
            format: format_of(current),
        },
        Swapper {
            rx,
            retirer,
            swaps: 0,
        },
        collector,
    )
}

impl Swapper {
    /// Swaps the newest pending schedule into `current`, which [takes over]
    /// (Schedule::take_over) the old one's timeline and queued events; real-time safe (no
    /// free: the old schedule is retired to the collector). Older pending schedules take
    /// over in turn and are retired unused.
    pub(crate) fn take(&mut self, current: &mut Schedule) {
        while self.retirer.room() > 0 {
            let Some(addr) = self.rx.pop() else { return };
            // SAFETY: `send` pushed this address from `Box::into_raw` and it is popped once.
            let mut incoming = unsafe { Box::from_raw(addr as *mut Schedule) };
            std::mem::swap(current, &mut incoming);
            current.take_over(&mut incoming);
            self.swaps += 1;
            if self.retirer.retire(incoming).is_err() {
                unreachable!("room was checked before popping");
            }
        }
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        while let Some(addr) = self.rx.pop() {
            // SAFETY: as in `take`; the engine is going away, off the audio thread.
            drop(unsafe { Box::from_raw(addr as *mut Schedule) });
        }
    }
}
