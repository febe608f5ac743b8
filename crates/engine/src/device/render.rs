//! The part of a real-time device that runs on the audio thread: render a block, record it,
//! hand it to the driver's buffers, all without allocating, freeing or faulting.

use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use downbeat_ring::{AudioQueue, AudioReader, AudioWriter};

use super::{DeviceError, DeviceSample};
use crate::record::RecordTap;
use crate::Engine;

/// Largest block a driver may ask for at once; longer callbacks are rendered in pieces.
pub const MAX_CALLBACK_FRAMES: usize = 8192;

/// Interleaved audio written by the audio thread and read by another, frame-complete, held
/// in memory.
///
/// A recording whose whole length is known and small (a test's, a short capture to look
/// at): the memory is allocated and touched before the run, so appending on the audio
/// thread never allocates or takes a page fault. The devices record to disk through a
/// [`Recorder`](crate::record::Recorder) instead, whose memory does not grow with the run.
/// Samples are stored as the bits of `f32` in relaxed atomics (a plain load or store on the
/// machines we run on), so a reader may look at the frames published so far while the run
/// goes on, without a lock and without `unsafe`.
///
/// ```
/// use downbeat::device::Take;
///
/// let rec = Take::new(4, 2);
/// rec.append(&[0.5, -0.5, 0.25, -0.25]);
/// assert_eq!(rec.frames(), 2);
/// assert_eq!(rec.to_vec(), [0.5, -0.5, 0.25, -0.25]);
/// ```
#[derive(Debug)]
pub struct Take {
    samples: Box<[AtomicU32]>,
    channels: usize,
    written: AtomicUsize,
}

impl Take {
    /// Room for `frames` frames of `channels` channels, touched now so that recording
    /// never page-faults on the audio thread.
    pub fn new(frames: usize, channels: usize) -> Arc<Self> {
        let samples: Box<[AtomicU32]> = (0..frames * channels).map(|_| AtomicU32::new(0)).collect();
        // The allocator may hand out zeroed pages that are only mapped on first write; one
        // store per page maps them now.
        for s in samples
            .iter()
            .step_by(4096 / std::mem::size_of::<AtomicU32>())
        {
            s.store(0, Ordering::Relaxed);
        }
        Arc::new(Self {
            samples,
            channels: channels.max(1),
            written: AtomicUsize::new(0),
        })
    }

    /// Appends interleaved frames; what does not fit is left out (the run is over by then).
    /// Real-time safe. Meant for one writer: two threads appending at once would interleave
    /// their frames unpredictably (never unsoundly).
    pub fn append(&self, interleaved: &[f32]) {
        let start = self.written.load(Ordering::Relaxed) * self.channels;
        let room = &self.samples[start.min(self.samples.len())..];
        let n = interleaved.len().min(room.len()) / self.channels * self.channels;
        for (slot, s) in room.iter().zip(&interleaved[..n]) {
            slot.store(s.to_bits(), Ordering::Relaxed);
        }
        // Publishes the stores above to readers that acquire `written`.
        self.written
            .store((start + n) / self.channels, Ordering::Release);
    }

    /// Frames recorded so far.
    pub fn frames(&self) -> usize {
        self.written.load(Ordering::Acquire)
    }

    /// Interleaved channels.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// The frames recorded so far, interleaved (a copy).
    pub fn to_vec(&self) -> Vec<f32> {
        let n = self.frames() * self.channels;
        self.samples[..n]
            .iter()
            .map(|s| f32::from_bits(s.load(Ordering::Relaxed)))
            .collect()
    }

    /// Writes the frames recorded so far to a 32-bit float WAV file.
    ///
    /// # Errors
    /// [`DeviceError::Io`] when the file cannot be written.
    pub fn write_wav(&self, path: &Path, sample_rate: u32) -> Result<(), DeviceError> {
        let mut w = super::wav::create(path, self.channels, sample_rate)?;
        let n = self.frames() * self.channels;
        for s in &self.samples[..n] {
            w.write_sample(f32::from_bits(s.load(Ordering::Relaxed)))
                .map_err(|e| super::wav::io(path, e))?;
        }
        w.finalize().map_err(|e| super::wav::io(path, e))
    }
}

/// The per-channel buffers a driver hands its callback for output (JACK's output ports,
/// for instance): one slice per channel, each at least as long as the callback's frames.
///
/// Implemented for slices of `Vec<f32>`, which is how tests stand in for a driver.
pub trait PlanarBuffers {
    /// Channel `c`'s buffer.
    fn channel_mut(&mut self, c: usize) -> &mut [f32];
}

impl PlanarBuffers for [Vec<f32>] {
    fn channel_mut(&mut self, c: usize) -> &mut [f32] {
        &mut self[c]
    }
}

/// The per-channel buffers a driver hands its callback for input (JACK's input ports).
pub trait PlanarInputs {
    /// Channel `c`'s buffer.
    fn channel(&self, c: usize) -> &[f32];
}

impl PlanarInputs for [Vec<f32>] {
    fn channel(&self, c: usize) -> &[f32] {
        &self[c]
    }
}

/// The input side of a sound card whose input arrives in a callback of its own: converts
/// each captured buffer to `f32` and queues it for the [`Renderer`], which takes exactly as
/// many frames per block as it plays (see [`Renderer::input_queue`]).
///
/// ```
/// use downbeat::device::CaptureSender;
///
/// let (mut sender, mut queue) = CaptureSender::new(2, 1024);
/// assert_eq!(sender.push(&[16384i16, -16384]), 0); // one frame, none dropped
/// let mut frame = [0.0f32; 2];
/// assert_eq!(queue.pop_interleaved(&mut frame), 1);
/// assert_eq!(frame, [0.5, -0.5]);
/// ```
pub struct CaptureSender {
    queue: AudioWriter,
    scratch: Vec<f32>,
}

impl fmt::Debug for CaptureSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaptureSender")
            .field("channels", &self.queue.channels())
            .field("capacity", &self.queue.capacity())
            .finish()
    }
}

impl CaptureSender {
    /// A sender of `channels` channels and the queue's reading end, which holds up to
    /// `capacity` frames.
    pub fn new(channels: usize, capacity: usize) -> (Self, AudioReader) {
        let (queue, reader) = AudioQueue::new(channels, capacity);
        let sender = Self {
            queue,
            scratch: downbeat_graph::prefaulted(MAX_CALLBACK_FRAMES * channels),
        };
        (sender, reader)
    }

    /// Queues a captured buffer (interleaved, whole frames, any length and format) and
    /// returns how many frames did not fit and were dropped. Real-time safe: the whole body
    /// of an input callback.
    pub fn push<T: DeviceSample>(&mut self, data: &[T]) -> usize {
        let ch = self.queue.channels();
        let mut dropped = 0;
        for chunk in data.chunks(self.scratch.len()) {
            let dst = &mut self.scratch[..chunk.len()];
            for (d, s) in dst.iter_mut().zip(chunk) {
                *d = s.to_f32();
            }
            dropped += chunk.len() / ch - self.queue.push_interleaved(dst);
        }
        dropped
    }
}

/// Where the capture for the next block comes from, when the driver does not hand it over
/// in the same call.
enum Feed {
    /// No input: the `input` nodes hear silence.
    Silence,
    /// A file, read from `position` on; silence after its end.
    File {
        samples: Arc<[f32]>,
        position: usize,
    },
    /// A queue the driver's input callback fills (sound cards whose input and output come
    /// in separate callbacks).
    Queue(AudioReader),
}

/// Where a renderer records to.
enum Sink {
    /// Memory.
    Take(Arc<Take>),
    /// A file, through a writer thread.
    Tap(RecordTap),
}

impl Sink {
    fn write(&mut self, interleaved: &[f32]) {
        match self {
            Sink::Take(t) => t.append(interleaved),
            Sink::Tap(t) => t.write(interleaved),
        }
    }
}

/// The audio-thread side of a device: owns the [`Engine`] for the run, renders blocks of
/// any size a driver asks for, hands the `input` nodes their capture, records what was
/// played (and, if asked, what was captured), all without allocating.
///
/// ```
/// use downbeat::device::Renderer;
/// use downbeat::{project::Project, Engine};
///
/// let p = Project::parse("edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n", "x.toml").unwrap();
/// let mut r = Renderer::new(Engine::new(p.build().unwrap()), 1000);
/// let mut card = vec![0i16; 2 * 300]; // a driver's interleaved 16-bit buffer
/// while !r.done() {
///     r.fill_interleaved(&mut card, 2);
/// }
/// assert_eq!(r.frames(), 1200); // whole callbacks: the last one runs past the length
/// let engine = r.into_engine();
/// ```
pub struct Renderer {
    engine: Engine,
    out_channels: usize,
    in_channels: usize,
    scratch: Vec<f32>,
    captured: Vec<f32>,
    left: u64,
    frames: u64,
    recording: Option<Sink>,
    input_recording: Option<Sink>,
    feed: Feed,
    input_gaps: u64,
}

impl fmt::Debug for Renderer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Renderer")
            .field("out_channels", &self.out_channels)
            .field("in_channels", &self.in_channels)
            .field("frames", &self.frames)
            .field("left", &self.left)
            .finish_non_exhaustive()
    }
}

impl Renderer {
    /// A renderer running `engine` that reports [`done`](Self::done) after `frames` frames.
    /// The input channels are those of the engine's [`capture`](Engine::capture).
    pub fn new(engine: Engine, frames: u64) -> Self {
        let out_channels = engine.channels();
        let in_channels = engine.capture().map_or(0, |c| c.channels());
        Self {
            engine,
            out_channels,
            in_channels,
            scratch: downbeat_graph::prefaulted(MAX_CALLBACK_FRAMES * out_channels),
            captured: downbeat_graph::prefaulted(MAX_CALLBACK_FRAMES * in_channels),
            left: frames,
            frames: 0,
            recording: None,
            input_recording: None,
            feed: Feed::Silence,
            input_gaps: 0,
        }
    }

    /// Records the first frames played (up to the length) into `recording`.
    pub fn record(mut self, recording: Arc<Take>) -> Self {
        self.recording = Some(Sink::Take(recording));
        self
    }

    /// Records the capture the `input` nodes receive into `recording`, frame for frame
    /// with what is played.
    pub fn record_input(mut self, recording: Arc<Take>) -> Self {
        self.input_recording = Some(Sink::Take(recording));
        self
    }

    /// Records the first frames played (up to the length) to a file, through `tap`'s
    /// writer thread (see [`Recorder`](crate::record::Recorder)): what the audio thread
    /// does per block is one push into a wait-free ring.
    ///
    /// ```
    /// use downbeat::device::Renderer;
    /// use downbeat::record::{RecordOptions, Recorder, WhenFull};
    /// use downbeat::{project::Project, Engine};
    ///
    /// let p = Project::parse("edges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n", "x.toml").unwrap();
    /// let path = std::env::temp_dir().join("downbeat-record-stream-doc.wav");
    /// let (recorder, tap) =
    ///     Recorder::start(&path, 2, 48_000, &RecordOptions::default(), WhenFull::CountLost).unwrap();
    /// let mut r = Renderer::new(Engine::new(p.build().unwrap()), 1000).record_stream(tap);
    /// while !r.done() {
    ///     r.render(256);
    /// }
    /// drop(r.into_engine()); // the tap goes with the renderer
    /// assert_eq!(recorder.finish().unwrap().frames, 1000);
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn record_stream(mut self, tap: RecordTap) -> Self {
        self.recording = Some(Sink::Tap(tap));
        self
    }

    /// Records the capture the `input` nodes receive to a file through `tap`'s writer
    /// thread, frame for frame with what is played.
    pub fn record_input_stream(mut self, tap: RecordTap) -> Self {
        self.input_recording = Some(Sink::Tap(tap));
        self
    }

    /// Feeds the `input` nodes from `file` (see [`InputFile`](super::InputFile)).
    pub fn input_file(mut self, file: &super::InputFile) -> Self {
        self.feed = Feed::File {
            samples: Arc::clone(file.samples()),
            position: 0,
        };
        self
    }

    /// Feeds the `input` nodes from `queue`, which a driver's input callback fills. A block
    /// the queue cannot fill hears silence for the missing frames and counts as an
    /// [`input_gap`](Self::input_gaps).
    pub fn input_queue(mut self, queue: AudioReader) -> Self {
        self.feed = Feed::Queue(queue);
        self
    }

    /// Input channels the `input` nodes hear (0 without a capture).
    pub fn input_channels(&self) -> usize {
        self.in_channels
    }

    /// Output channels.
    pub fn channels(&self) -> usize {
        self.out_channels
    }

    /// Frames produced so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// True once the requested length has been produced, or the engine's
    /// [`Stopper`](crate::Stopper) asked the run to end.
    pub fn done(&self) -> bool {
        self.left == 0 || self.engine.stopper_ref().is_stopped()
    }

    /// Frames still to produce before [`done`](Self::done).
    pub fn remaining(&self) -> u64 {
        self.left
    }

    /// Blocks whose input the queue could not fill in time.
    pub fn input_gaps(&self) -> u64 {
        self.input_gaps
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The engine, to queue events for the frames about to be rendered (a driver's MIDI).
    pub fn engine_mut(&mut self) -> &mut Engine {
        &mut self.engine
    }

    /// The engine back, once the run is over.
    pub fn into_engine(self) -> Engine {
        self.engine
    }

    /// Takes the next `frames` frames of capture from the feed into `captured`.
    fn pull_capture(&mut self, frames: usize) {
        let want = frames * self.in_channels;
        let dst = &mut self.captured[..want];
        match &mut self.feed {
            Feed::Silence => dst.fill(0.0),
            Feed::File { samples, position } => {
                let src = samples.get(*position..).unwrap_or_default();
                let n = src.len().min(want);
                dst[..n].copy_from_slice(&src[..n]);
                dst[n..].fill(0.0);
                *position += want;
            }
            Feed::Queue(queue) => {
                let got = queue.pop_interleaved(dst) * self.in_channels;
                if got < want {
                    dst[got..].fill(0.0);
                    self.input_gaps += 1;
                }
            }
        }
    }

    /// Processes `frames` frames (at most [`MAX_CALLBACK_FRAMES`]) with the capture already
    /// in `captured`, and records both.
    fn render_captured(&mut self, frames: usize) -> &[f32] {
        let keep = (frames as u64).min(self.left) as usize;
        let input = &self.captured[..frames * self.in_channels];
        if let Some(r) = &mut self.input_recording {
            r.write(&input[..keep * self.in_channels]);
        }
        let out = &mut self.scratch[..frames * self.out_channels];
        self.engine.process_with_input(input, out);
        if let Some(r) = &mut self.recording {
            r.write(&out[..keep * self.out_channels]);
        }
        self.left -= keep as u64;
        self.frames += frames as u64;
        out
    }

    /// Renders `frames` frames (at most [`MAX_CALLBACK_FRAMES`]), the `input` nodes hearing
    /// the feed (a file, a queue, or silence), and returns them interleaved. Real-time safe.
    pub fn render(&mut self, frames: usize) -> &[f32] {
        self.pull_capture(frames);
        self.render_captured(frames)
    }

    /// Renders as many frames as `input` holds (interleaved, [`input_channels`] per frame,
    /// at most [`MAX_CALLBACK_FRAMES`]): a driver that hands over its capture in the same
    /// call. Returns the output interleaved. Real-time safe.
    ///
    /// [`input_channels`]: Self::input_channels
    pub fn render_duplex(&mut self, input: &[f32]) -> &[f32] {
        let frames = input.len() / self.in_channels.max(1);
        self.captured[..input.len()].copy_from_slice(input);
        self.render_captured(frames)
    }

    /// Renders `frames` frames, any number, reading the capture from a driver's
    /// per-channel input buffers (ignored when there is no capture) and writing straight
    /// into its per-channel output buffers: the whole body of a planar driver callback.
    /// Real-time safe.
    pub fn render_planar(
        &mut self,
        frames: usize,
        input: &(impl PlanarInputs + ?Sized),
        out: &mut (impl PlanarBuffers + ?Sized),
    ) {
        let (in_ch, out_ch) = (self.in_channels, self.out_channels);
        let mut offset = 0;
        while offset < frames {
            let n = (frames - offset).min(MAX_CALLBACK_FRAMES);
            for c in 0..in_ch {
                let port = &input.channel(c)[offset..offset + n];
                for (frame, &s) in self.captured.chunks_exact_mut(in_ch).zip(port) {
                    frame[c] = s;
                }
            }
            let block = self.render_captured(n);
            for c in 0..out_ch {
                let port = &mut out.channel_mut(c)[offset..offset + n];
                for (o, frame) in port.iter_mut().zip(block.chunks_exact(out_ch)) {
                    *o = frame[c];
                }
            }
            offset += n;
        }
    }

    /// Fills a driver's interleaved buffer of `channels` channels, any length, in any
    /// [`DeviceSample`] format: the engine's channel `c` goes to the device's channel `c`,
    /// device channels beyond the engine's are silent, engine channels beyond the
    /// device's are left out. The `input` nodes hear the feed. Real-time safe.
    pub fn fill_interleaved<T: DeviceSample>(&mut self, out: &mut [T], channels: usize) {
        let out_ch = self.out_channels;
        let channels = channels.max(1);
        for piece in out.chunks_mut(MAX_CALLBACK_FRAMES * channels) {
            let frames = piece.len() / channels;
            let block = self.render(frames);
            for (dst, src) in piece
                .chunks_exact_mut(channels)
                .zip(block.chunks_exact(out_ch))
            {
                for (c, d) in dst.iter_mut().enumerate() {
                    *d = T::from_f32(src.get(c).copied().unwrap_or(0.0));
                }
            }
        }
    }
}
