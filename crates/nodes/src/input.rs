//! `input`: the device's capture as a source, and [`Capture`], the block of captured audio
//! that the device writes and the node reads.

use std::{
    cell::RefCell,
    sync::{
        atomic::{AtomicU32, AtomicUsize, Ordering},
        Arc,
    },
};

use crate::{check_channels, invalid, CHANNELS};
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, NodeType, ParamError, ParamSpec, Params, ProcessContext,
};

/// One block of captured audio, shared between the device that writes it and the [`Input`]
/// nodes that read it.
///
/// The device (through `downbeat::Engine`) writes the capture for the frames about to be
/// processed, then runs the schedule; every [`Input`] node copies it out during that block.
/// Samples travel as the bits of `f32` in relaxed atomics: a plain load or store on the
/// machines we run on, no lock, no `unsafe`. The ordering between the write and the reads
/// comes from the schedule itself (the same thread, or the worker pool's hand-over).
///
/// Cloning is cheap and gives another handle to the same block.
///
/// ```
/// use downbeat_nodes::{Capture, Input, Output};
/// use downbeat_graph::{CompileConfig, Graph};
///
/// let capture = Capture::new(2, 64);
/// let mut g = Graph::new();
/// let mic = g.add("mic", Input::new(&capture, 2).unwrap());
/// let out = g.add("out", Output::new(2));
/// g.connect(mic, out);
/// g.set_output(out);
/// let mut schedule = g.compile(CompileConfig { sample_rate: 48000, max_block: 64 }).unwrap();
///
/// capture.write_interleaved(&[0.5, -0.5, 0.25, -0.25]); // two frames, L R L R
/// schedule.process(2);
/// assert_eq!(schedule.output().channel(0), &[0.5, 0.25]);
/// assert_eq!(schedule.output().channel(1), &[-0.5, -0.25]);
/// ```
#[derive(Clone, Debug)]
pub struct Capture {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    channels: usize,
    max_block: usize,
    /// Planar: channel `c` at `c * max_block ..`.
    samples: Box<[AtomicU32]>,
    /// Frames written by the last write.
    frames: AtomicUsize,
}

thread_local! {
    /// The capture that `input` nodes built from the registry on this thread read, set for
    /// the duration of [`Capture::connect`].
    static CONNECTED: RefCell<Option<Capture>> = const { RefCell::new(None) };
}

impl Capture {
    /// A capture of `channels` channels and blocks of up to `max_block` frames, its memory
    /// touched now so that writing it on the audio thread never page-faults.
    pub fn new(channels: usize, max_block: usize) -> Self {
        let samples: Box<[AtomicU32]> = (0..channels * max_block)
            .map(|_| AtomicU32::new(0))
            .collect();
        // The allocator may hand out zeroed pages mapped on first write: one store per page.
        for s in samples.iter().step_by(1024) {
            s.store(0, Ordering::Relaxed);
        }
        Self {
            shared: Arc::new(Shared {
                channels,
                max_block,
                samples,
                frames: AtomicUsize::new(0),
            }),
        }
    }

    /// Channels captured.
    pub fn channels(&self) -> usize {
        self.shared.channels
    }

    /// The largest block one write holds.
    pub fn max_block(&self) -> usize {
        self.shared.max_block
    }

    /// Stores the capture for the next block: `interleaved.len() / channels()` frames.
    /// Real-time safe.
    ///
    /// # Panics
    /// If the slice is not a whole number of frames or holds more than
    /// [`max_block`](Self::max_block) of them.
    pub fn write_interleaved(&self, interleaved: &[f32]) {
        let s = &*self.shared;
        let ch = s.channels.max(1);
        assert_eq!(interleaved.len() % ch, 0, "capture is not whole frames");
        let frames = interleaved.len() / ch;
        assert!(frames <= s.max_block, "capture block of {frames} frames");
        for c in 0..s.channels {
            let dst = &s.samples[c * s.max_block..c * s.max_block + frames];
            for (d, frame) in dst.iter().zip(interleaved.chunks_exact(ch)) {
                d.store(frame[c].to_bits(), Ordering::Relaxed);
            }
        }
        s.frames.store(frames, Ordering::Relaxed);
    }

    /// Stores the capture for the next block from planar channels: channel `c` is
    /// `planar[c * stride + offset..][..frames]`, for a caller whose audio is one buffer per
    /// channel, back to back (a `(channels, frames)` array). Real-time safe.
    ///
    /// ```
    /// use downbeat_nodes::Capture;
    /// let capture = Capture::new(2, 64);
    /// // Two channels of four frames; the block is frames 1 and 2.
    /// capture.write_planar(&[0.0, 0.1, 0.2, 0.3, 1.0, 1.1, 1.2, 1.3], 4, 1, 2);
    /// # let _ = capture;
    /// ```
    ///
    /// # Panics
    /// If a channel's block is outside `planar` or holds more than
    /// [`max_block`](Self::max_block) frames.
    pub fn write_planar(&self, planar: &[f32], stride: usize, offset: usize, frames: usize) {
        let s = &*self.shared;
        assert!(frames <= s.max_block, "capture block of {frames} frames");
        for c in 0..s.channels {
            let src = &planar[c * stride + offset..c * stride + offset + frames];
            let dst = &s.samples[c * s.max_block..c * s.max_block + frames];
            for (d, &x) in dst.iter().zip(src) {
                d.store(x.to_bits(), Ordering::Relaxed);
            }
        }
        s.frames.store(frames, Ordering::Relaxed);
    }

    /// Stores `frames` frames of silence as the next block. Real-time safe.
    pub fn write_silence(&self, frames: usize) {
        let s = &*self.shared;
        let frames = frames.min(s.max_block);
        for c in 0..s.channels {
            for d in &s.samples[c * s.max_block..c * s.max_block + frames] {
                d.store(0, Ordering::Relaxed);
            }
        }
        s.frames.store(frames, Ordering::Relaxed);
    }

    /// Runs `build` (typically building a project from node types) with this capture as the
    /// one that `input` nodes made from the registry read. An `input` node built by name
    /// outside `connect` reads a capture of its own that nothing writes: it is silent. (The
    /// `downbeat` command refuses to run a project with `input` nodes when it has no input to
    /// give them.)
    ///
    /// ```
    /// use downbeat_graph::{NodeConfig, ParamValue};
    /// use downbeat_nodes::{node_type, Capture};
    ///
    /// let cfg = NodeConfig { sample_rate: 48000, max_block: 256 };
    /// let input = node_type("input").unwrap();
    /// let mono = Capture::new(1, 256);
    /// let stereo = vec![("channels".to_string(), ParamValue::Int(2))];
    /// assert!(mono.connect(|| input.instantiate(stereo.clone(), &cfg)).is_err());
    /// let node = Capture::new(2, 256).connect(|| input.instantiate(stereo, &cfg)).unwrap();
    /// assert_eq!(node.output_channels(), 2);
    /// ```
    pub fn connect<R>(&self, build: impl FnOnce() -> R) -> R {
        struct Restore(Option<Capture>);
        impl Drop for Restore {
            fn drop(&mut self) {
                CONNECTED.with(|c| *c.borrow_mut() = self.0.take());
            }
        }
        let previous = CONNECTED.with(|c| c.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        build()
    }

    /// Whether `other` is a handle to the same block.
    pub fn same_as(&self, other: &Capture) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Copies channel `c` of the last write into `out`, zero past what was written.
    fn read(&self, c: usize, out: &mut [f32]) {
        let s = &*self.shared;
        let written = s.frames.load(Ordering::Relaxed).min(out.len());
        let src = &s.samples[c * s.max_block..c * s.max_block + written];
        for (o, v) in out.iter_mut().zip(src) {
            *o = f32::from_bits(v.load(Ordering::Relaxed));
        }
        out[written..].fill(0.0);
    }
}

/// The device's input as a source node: channel `c` of its output is channel `c` of the
/// [`Capture`] for the current block, so it is sample-aligned with what the block plays.
///
/// See [`Capture`] for an example.
#[derive(Debug)]
pub struct Input {
    capture: Capture,
    channels: usize,
}

impl Input {
    /// An input node reading the first `channels` channels of `capture`.
    ///
    /// # Errors
    /// [`ParamError::Invalid`] for `channels` when it is outside 1..=32 or above what the
    /// capture holds.
    pub fn new(capture: &Capture, channels: usize) -> Result<Self, ParamError> {
        check_channels(channels)?;
        if channels > capture.channels() {
            return Err(invalid(
                "channels",
                format!(
                    "got {channels}, but the input has {} channel(s); ask for at most that many",
                    capture.channels()
                ),
            ));
        }
        Ok(Self {
            capture: capture.clone(),
            channels,
        })
    }
}

static PARAMS: &[ParamSpec] = &[CHANNELS];

pub(crate) const TYPE: NodeType = NodeType {
    name: "input",
    doc: "the device's input (sound card capture, JACK input ports, or a WAV file with `--input`), sample-aligned with the output",
    params: PARAMS,
    build,
};

fn build(p: &Params, cfg: &NodeConfig) -> Result<Box<dyn Node>, ParamError> {
    let channels = p.int("channels") as usize;
    // Outside `Capture::connect` nothing will ever write the capture: the node is silent.
    let capture = CONNECTED
        .with(|c| c.borrow().clone())
        .unwrap_or_else(|| Capture::new(channels, cfg.max_block));
    if capture.max_block() < cfg.max_block {
        return Err(invalid(
            "channels",
            format!(
                "the connected capture holds blocks of {} frames, the project {}",
                capture.max_block(),
                cfg.max_block
            ),
        ));
    }
    Ok(Box::new(Input::new(&capture, channels)?))
}

impl Node for Input {
    fn type_name(&self) -> Option<&'static str> {
        Some(TYPE.name)
    }

    fn input_channels(&self) -> usize {
        0
    }

    fn output_channels(&self) -> usize {
        self.channels
    }

    fn process(&mut self, _ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        for c in 0..self.channels {
            self.capture.read(c, output.channel_mut(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_was_written_and_silence_past_it() {
        let capture = Capture::new(3, 8);
        let mut node = Input::new(&capture, 2).unwrap();
        capture.write_interleaved(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let ctx = ProcessContext::new(48000, 3, 0);
        let mut out = vec![9.0f32; 16];
        node.process(
            &ctx,
            AudioRef::new(&[], 0, 8, 3),
            AudioMut::new(&mut out, 2, 8, 3),
        );
        // Two frames written, a block of three: the third frame is silence.
        assert_eq!(&out[..3], &[1.0, 4.0, 0.0]);
        assert_eq!(&out[8..11], &[2.0, 5.0, 0.0]);
        capture.write_silence(3);
        node.process(
            &ctx,
            AudioRef::new(&[], 0, 8, 3),
            AudioMut::new(&mut out, 2, 8, 3),
        );
        assert_eq!(&out[..3], &[0.0; 3]);
    }

    #[test]
    fn more_channels_than_captured_is_refused_by_name() {
        let capture = Capture::new(1, 8);
        let e = Input::new(&capture, 2).unwrap_err();
        assert!(e.to_string().contains("1 channel(s)"), "{e}");
    }

    #[test]
    fn connect_is_scoped_and_nests() {
        let cfg = NodeConfig {
            sample_rate: 48000,
            max_block: 4,
        };
        let (a, b) = (Capture::new(1, 4), Capture::new(2, 4));
        let ty = crate::node_type("input").unwrap();
        a.connect(|| {
            b.connect(|| {
                let n = ty
                    .instantiate(
                        vec![("channels".into(), downbeat_graph::ParamValue::Int(2))],
                        &cfg,
                    )
                    .unwrap();
                assert_eq!(n.output_channels(), 2);
            });
            // Back to `a`, which has one channel only.
            assert!(ty
                .instantiate(
                    vec![("channels".into(), downbeat_graph::ParamValue::Int(2))],
                    &cfg
                )
                .is_err());
        });
        // Outside any scope: a silent input of its own.
        assert_eq!(ty.instantiate(vec![], &cfg).unwrap().output_channels(), 2);
    }
}
