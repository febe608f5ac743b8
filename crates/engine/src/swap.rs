//! Hot swap: a control thread sends a newly compiled [`Schedule`] to the running engine,
//! which swaps it in at the next block boundary and sends the old one off to be freed.

use std::fmt;

use downbeat_graph::Schedule;
use downbeat_ring::{Consumer, Producer, RingBuffer};
use downbeat_rt::reclaim::{self, Reclaimer, Retirer};

/// The control thread's end of a hot-swap channel, made by
/// [`Engine::swap_channel`](crate::Engine::swap_channel).
pub struct ScheduleSender {
    tx: Producer<Box<Schedule>>,
    format: (u32, usize, usize),
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

fn format_of(s: &Schedule) -> (u32, usize, usize) {
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
        self.tx
            .push(schedule)
            .map_err(|full| SwapError::Full(full.0))
    }

    /// Schedules that can be sent before the engine takes the ones sent already.
    pub fn room(&self) -> usize {
        self.tx.available_write()
    }
}

/// The engine's end: pending schedules and where old ones go. Schedules still pending when
/// both ends are gone are freed with the ring.
pub(crate) struct Swapper {
    rx: Consumer<Box<Schedule>>,
    retirer: Retirer,
    pub(crate) swaps: u64,
    /// Schedules retired unused because they keep nodes of a schedule that was not running
    /// (an editor's commit after another sender's swap).
    pub(crate) refused: u64,
}

pub(crate) fn channel(current: &Schedule, capacity: usize) -> (ScheduleSender, Swapper, Reclaimer) {
    let (tx, rx) = RingBuffer::new(capacity);
    // One more than the schedules in flight, so a swap never finds the reclaim queue full
    // while the reclaimer keeps up; if it does not, swaps wait (see `take`).
    let (retirer, reclaimer) = reclaim::queue(capacity + 1);
    (
        ScheduleSender {
            tx,
            format: format_of(current),
        },
        Swapper {
            rx,
            retirer,
            swaps: 0,
            refused: 0,
        },
        reclaimer,
    )
}

impl Swapper {
    /// Swaps the newest pending schedule into `current`, which [takes over]
    /// (Schedule::take_over) the old one's timeline and queued events; real-time safe (no
    /// free: the old schedule is retired to the reclaimer). Older pending schedules take
    /// over in turn and are retired unused. A schedule an
    /// [`Editor`](downbeat_graph::Editor) committed after another than the running one
    /// cannot take over (the nodes it keeps are not there): it is retired unused and
    /// counted in `refused`.
    pub(crate) fn take(&mut self, current: &mut Schedule) {
        while self.retirer.room() > 0 {
            let Some(mut incoming) = self.rx.pop() else {
                return;
            };
            if !incoming.can_take_over(current) {
                self.refused += 1;
                if self.retirer.retire(incoming).is_err() {
                    unreachable!("room was checked before popping");
                }
                continue;
            }
            std::mem::swap(current, &mut incoming);
            current.take_over(&mut incoming);
            self.swaps += 1;
            if self.retirer.retire(incoming).is_err() {
                unreachable!("room was checked before popping");
            }
        }
    }
}
