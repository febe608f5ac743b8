//! The writer thread: takes frames from the ring, writes them to the file, and makes the
//! header state them at least once per [`RecordOptions::sync_every`].

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use downbeat_ring::{AudioQueue, AudioReader, Consumer, RingBuffer};

use super::tap::{Gap, RecordTap, Shared, WhenFull};
use super::wav::WavStream;
use super::{RecordOptions, Recorded};
use crate::device::DeviceError;

/// Gaps the tap can tell the writer of before the writer takes them: a gap is written
/// into the file as soon as the writer reaches it, so this only runs out when the disk
/// stalls through more than this many separate losses.
const GAP_SLOTS: usize = 1024;

/// How long the writer sleeps when the ring is empty: a small share of the ring, so the
/// ring never fills because the writer slept.
const IDLE: Duration = Duration::from_millis(5);

/// The writer's `SCHED_FIFO` priority where the system grants one: below the audio thread
/// (80) and the pool's workers (70), above every ordinary thread, so that other programs (a
/// build) do not decide when the ring is drained; it only loses frames when the engine's own
/// threads hold the cores for longer than the ring lasts. It sleeps whenever the ring is
/// empty, so it takes little from anyone.
const WRITER_PRIORITY: i32 = 20;

/// A recording to a WAV file through a writer thread: the audio thread hands frames to a
/// [`RecordTap`], the writer thread writes them, and [`finish`](Self::finish) closes the
/// file and says how many frames it holds and how many were lost.
///
/// Memory stays constant however long the run: the ring holds
/// [`RecordOptions::ring_seconds`] of audio (4 s by default), allocated and touched when the
/// recorder starts.
///
/// ```
/// use downbeat::record::{RecordOptions, Recorder, WhenFull};
///
/// let path = std::env::temp_dir().join("downbeat-recorder-doc.wav");
/// let (recorder, mut tap) =
///     Recorder::start(&path, 2, 48_000, &RecordOptions::default(), WhenFull::CountLost).unwrap();
/// tap.write(&[0.5, -0.5, 0.25, -0.25]); // on the audio thread: never waits
/// drop(tap);
/// let recorded = recorder.finish().unwrap();
/// assert_eq!((recorded.frames, recorded.lost_frames), (2, 0));
/// # std::fs::remove_file(&path).unwrap();
/// ```
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<std::io::Result<u64>>>,
}

impl Drop for Recorder {
    /// A recorder dropped without [`finish`](Recorder::finish) (a run that failed before it
    /// started) still ends its thread, which closes the file.
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::Release);
    }
}

impl Recorder {
    /// Creates `path` (a WAV file stating no frames yet), the ring and the writer thread,
    /// and hands back the audio thread's end.
    ///
    /// # Errors
    /// [`DeviceError::Config`] when the ring asked for is larger than a ring can be (over
    /// 2^30 samples); [`DeviceError::Io`] when the file cannot be created or the thread
    /// cannot start.
    pub fn start(
        path: &Path,
        channels: usize,
        sample_rate: u32,
        options: &RecordOptions,
        when_full: WhenFull,
    ) -> Result<(Self, RecordTap), DeviceError> {
        let channels = channels.max(1);
        let capacity = ((options.ring_seconds * f64::from(sample_rate)).ceil() as usize).max(64);
        if capacity.saturating_mul(channels) > downbeat_ring::layout::MAX_CAPACITY {
            return Err(DeviceError::Config(format!(
                "recording `{}`: a ring of {} s of {channels} channels is more than the ring \
                 can hold ({} samples)",
                path.display(),
                options.ring_seconds,
                downbeat_ring::layout::MAX_CAPACITY
            )));
        }
        let wav = WavStream::create(path, channels, sample_rate, options.rf64_after)
            .map_err(|e| io_error(path, e))?;
        let (mut audio, mut reader) = AudioQueue::new(channels, capacity);
        prefault(&mut audio, &mut reader);
        let (gap_tx, gap_rx) = RingBuffer::new(GAP_SLOTS);
        let shared = Arc::new(Shared::default());
        let writer = Writer {
            wav,
            reader,
            gaps: gap_rx,
            shared: Arc::clone(&shared),
            sync_every: options.sync_every,
            pause: options.write_pause,
            chunk: (sample_rate as usize / 10).max(1024).min(capacity),
        };
        let thread = std::thread::Builder::new()
            .name("downbeat-recorder".into())
            .spawn(move || {
                // Refused without the privilege: the writer then competes as any thread.
                let _ = downbeat_rt::pool::set_current_thread_realtime(WRITER_PRIORITY);
                writer.run()
            })
            .map_err(|e| io_error(path, e))?;
        let tap = RecordTap::new(audio, gap_tx, Arc::clone(&shared), when_full);
        Ok((
            Self {
                path: path.to_path_buf(),
                shared,
                thread: Some(thread),
            },
            tap,
        ))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Frames lost so far.
    pub fn lost_frames(&self) -> u64 {
        self.shared.lost.load(Ordering::Relaxed)
    }

    /// Writes what the tap has queued (call it once the audio thread is done with the
    /// tap), fills the frames lost at the end with silence, syncs the header and closes
    /// the file.
    ///
    /// # Errors
    /// [`DeviceError::Io`] when writing failed at any point of the run.
    pub fn finish(mut self) -> Result<Recorded, DeviceError> {
        self.shared.closing.store(true, Ordering::Release);
        let thread = self.thread.take().expect("finish runs once");
        let frames = match thread.join() {
            Ok(result) => result.map_err(|e| io_error(&self.path, e))?,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        Ok(Recorded {
            path: self.path.clone(),
            frames,
            lost_frames: self.shared.lost.load(Ordering::Acquire),
        })
    }
}

fn io_error(path: &Path, source: std::io::Error) -> DeviceError {
    DeviceError::Io {
        what: format!("cannot write `{}`", path.display()),
        source,
    }
}

/// Fills the ring once and empties it, so every page of it is mapped before the audio
/// thread writes there.
fn prefault(audio: &mut downbeat_ring::AudioWriter, reader: &mut AudioReader) {
    let zeros = vec![0.0f32; 4096 * audio.channels()];
    while audio.push_interleaved(&zeros) > 0 {}
    let mut sink = zeros;
    while reader.pop_interleaved(&mut sink) > 0 {}
}

struct Writer {
    wav: WavStream,
    reader: AudioReader,
    gaps: Consumer<Gap>,
    shared: Arc<Shared>,
    sync_every: Duration,
    pause: Duration,
    /// Frames per write.
    chunk: usize,
}

impl Writer {
    /// Runs until closed, and closes the file; the frames in it.
    fn run(mut self) -> std::io::Result<u64> {
        let result = match self.write_all() {
            Ok(frames) => self.wav.finish().map(|()| frames),
            Err(e) => Err(e),
        };
        if result.is_err() {
            self.shared.failed.store(true, Ordering::Release);
        }
        result
    }

    fn write_all(&mut self) -> std::io::Result<u64> {
        let ch = self.reader.channels();
        let mut scratch = vec![0.0f32; self.chunk * ch];
        let mut taken = 0u64;
        let mut silenced = 0u64;
        let mut last_sync = Instant::now();
        let mut warned = (0u64, Instant::now());
        loop {
            // Read before looking at the ring: whatever was queued before the close is
            // then seen below.
            let closing = self.shared.closing.load(Ordering::Acquire);
            // Read before the gaps: a gap is queued before the frames after it.
            let ready = self.reader.available_read() as u64;
            let mut want = ready.min(self.chunk as u64);
            if let Some(gap) = self.gaps.peek().copied() {
                if gap.at == taken {
                    self.gaps.pop();
                    self.wav.append_silence(gap.frames)?;
                    silenced += gap.frames;
                    continue;
                }
                want = want.min(gap.at - taken);
            }
            if want > 0 {
                let n = self
                    .reader
                    .pop_interleaved(&mut scratch[..want as usize * ch]);
                if !self.pause.is_zero() {
                    std::thread::sleep(self.pause);
                }
                self.wav.append(&scratch[..n * ch])?;
                taken += n as u64;
            } else if closing {
                break;
            } else {
                std::thread::sleep(IDLE);
            }
            if last_sync.elapsed() >= self.sync_every {
                self.wav.sync()?;
                last_sync = Instant::now();
            }
            self.warn_losses(&mut warned);
        }
        // Frames lost at the very end, after the last frame queued.
        let lost = self.shared.lost.load(Ordering::Acquire);
        self.wav.append_silence(lost.saturating_sub(silenced))?;
        Ok(self.wav.frames())
    }

    /// Says on stderr, at most once a second, that frames were lost since it last said.
    fn warn_losses(&self, (said, when): &mut (u64, Instant)) {
        let lost = self.shared.lost.load(Ordering::Relaxed);
        if lost > *said && when.elapsed() >= Duration::from_secs(1) {
            eprintln!(
                "warning: recording `{}`: {lost} frame(s) lost so far, the disk did not keep \
                 up (they are silence in the file)",
                self.wav.path().display()
            );
            *said = lost;
            *when = Instant::now();
        }
    }
}
