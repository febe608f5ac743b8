//! [`Reader`]: the thread that decodes ahead for every stream given to it.

use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread;
use std::time::Duration;

use super::feed::{Feed, Service};

/// How long the reader sleeps when no stream has anything for it to do. A seek waits at
/// most this long (plus the decoding) before the reader starts on it.
pub const DEFAULT_POLL: Duration = Duration::from_micros(500);

/// A reader thread, serving streams in turn: one chunk per stream per turn, so that one
/// stream catching up after a seek delays the others by at most a chunk's decoding.
///
/// It runs at normal priority, never on the audio thread's budget: it may block on the
/// disk, allocate and decode. Streams added with [`open`](super::open) stay with it until
/// their [`Tap`](super::Tap) is dropped; the thread ends once the `Reader` and all its
/// streams are gone. [`Reader::shared`] is the one the `player` node type uses, started the
/// first time a player is built.
///
/// ```
/// use downbeat_file::stream::Reader;
/// let reader = Reader::new(std::time::Duration::from_millis(1));
/// assert_eq!(reader.streams(), 0);
/// ```
#[derive(Debug, Clone)]
pub struct Reader {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Streams handed over and not yet taken by the thread. The thread holds it strongly,
    /// so a stream added just before the last `Reader` is dropped is still served.
    incoming: Arc<Mutex<Vec<FeedBox>>>,
    /// Streams the thread serves (for [`Reader::streams`]).
    serving: std::sync::atomic::AtomicUsize,
}

/// A feed, made printable for `Inner`'s derive.
struct FeedBox(Feed);

impl std::fmt::Debug for FeedBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Feed")
    }
}

impl Reader {
    /// Starts a reader thread that sleeps `poll` when idle.
    ///
    /// # Panics
    /// If the thread cannot be spawned (the system is out of threads).
    pub fn new(poll: Duration) -> Self {
        let inner = Arc::new(Inner::default());
        let weak = Arc::downgrade(&inner);
        let incoming = inner.incoming.clone();
        thread::Builder::new()
            .name("downbeat-reader".into())
            .spawn(move || run(&weak, &incoming, poll))
            .expect("spawning the reader thread");
        Self { inner }
    }

    /// The process-wide reader, started on first use with [`DEFAULT_POLL`].
    pub fn shared() -> &'static Reader {
        static SHARED: OnceLock<Reader> = OnceLock::new();
        SHARED.get_or_init(|| Reader::new(DEFAULT_POLL))
    }

    /// Streams being served (those whose taps are alive, give or take one poll).
    pub fn streams(&self) -> usize {
        let waiting = self
            .inner
            .incoming
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len();
        waiting
            + self
                .inner
                .serving
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn add(&self, feed: Feed) {
        self.inner
            .incoming
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(FeedBox(feed));
    }
}

fn run(inner: &Weak<Inner>, incoming: &Mutex<Vec<FeedBox>>, poll: Duration) {
    let mut feeds: Vec<FeedBox> = Vec::new();
    loop {
        let inner = inner.upgrade();
        // Taken after looking for a `Reader`, whether or not one is left: a stream added by
        // the last one before it went is served like the others.
        feeds.append(&mut incoming.lock().unwrap_or_else(|e| e.into_inner()));
        let alive = match inner {
            Some(inner) => {
                inner
                    .serving
                    .store(feeds.len(), std::sync::atomic::Ordering::Relaxed);
                true
            }
            None => false,
        };
        if !alive && feeds.is_empty() {
            return;
        }
        let mut worked = false;
        feeds.retain_mut(|f| match f.0.service() {
            Service::Worked => {
                worked = true;
                true
            }
            Service::Idle => true,
            Service::Gone => false,
        });
        if !worked {
            thread::sleep(poll);
        }
    }
}
