//! Downbeat's built-in node types, and the DSP kernels they share ([`dsp`]).
//!
//! Every type here is available two ways: by name from a project file (the `downbeat`
//! crate's catalog lists [`node_types`] first), and directly from Rust through the public
//! struct's constructor.
//!
//! | type | struct | what it does |
//! |------|--------|--------------|
//! | `output` | [`Output`] | the graph's sink |
//! | `input` | [`Input`] | the device's input (reads a [`Capture`]) |
//! | `gain` | [`Gain`] | linear gain |
//! | `mix` | [`Mix`] | bus with gain in dB and equal-power pan |
//! | `sine` | [`Sine`] | sine oscillator |
//! | `noise` | [`Noise`] | white noise |
//! | `karplus` | [`Karplus`] | Karplus-Strong plucked string playing a note pattern |
//! | `strings` | [`Strings`] | a bank of those strings played as voices, four computed at a time |
//! | `synth` | [`Synth`] | polyphonic synthesizer played by note events |
//! | `biquad` | [`Biquad`] | RBJ low-pass / high-pass / band-pass filter |
//! | `spectral_compressor` | [`SpectralCompressor`] | STFT per-bin compressor |
//! | `metronome` | [`Metronome`] | a click on every beat of the transport |
//! | `sampler` | [`Sampler`] | samples held in memory played on notes (built from buffers here; the project-file type, which loads files, is `downbeat-file`'s) |
//!
//! ```
//! use downbeat_graph::{CompileConfig, Graph};
//! use downbeat_nodes::{Output, Sine, SineSettings};
//!
//! let mut g = Graph::new();
//! let sine = g.add("tone", Sine::new(2, 48000, &SineSettings::default()));
//! let out = g.add("out", Output::new(2));
//! g.connect(sine, out);
//! g.set_output(out);
//! let mut schedule = g.compile(CompileConfig { sample_rate: 48000, max_block: 256 }).unwrap();
//! schedule.process(256);
//! assert!(schedule.output().channel(0).iter().any(|&s| s != 0.0));
//! ```

mod biquad;
pub mod dsp;
mod gain;
mod input;
mod karplus;
mod metronome;
mod mix;
mod noise;
mod note_queue;
mod output;
mod sampler;
mod sine;
mod spectral_compressor;
mod string_controls;
mod string_loop;
mod strings;
mod synth;

pub use biquad::{Biquad, BiquadSettings, FilterMode};
pub use gain::Gain;
pub use input::{Capture, Input};
pub use karplus::{Karplus, KarplusSettings, KARPLUS_PENDING};
pub use metronome::Metronome;
pub use mix::{Mix, MixSettings};
pub use noise::{Noise, NoiseSettings};
pub use output::Output;
pub use sampler::{
    note_name, parse_note, PlayMode, Sample, SampleSet, Sampler, SamplerError, SamplerSettings,
    MAX_SAMPLE_CHANNELS, SAMPLER_MAX_VOICES, SAMPLER_PENDING, SAMPLER_STEAL_FADE,
};
pub use sine::{Sine, SineSettings};
pub use spectral_compressor::{CompressorSettings, CompressorStats, SpectralCompressor};
pub use strings::{Strings, StringsSettings, MAX_STRINGS};
pub use synth::{Synth, SynthSettings, Wave, MAX_VOICES, PENDING_EVENTS, STEAL_FADE};

use downbeat_graph::{NodeType, ParamError, ParamKind, ParamSpec, Unit};

/// The `channels` parameter most node types share, for node types of other crates too.
///
/// ```
/// assert_eq!(downbeat_nodes::CHANNELS.name, "channels");
/// ```
pub const CHANNELS: ParamSpec = ParamSpec {
    name: "channels",
    doc: "number of audio channels of the node's ports",
    kind: ParamKind::Int {
        min: 1,
        max: 32,
        default: 2,
    },
    unit: Unit::None,
    live: false,
};

/// The `seed` parameter of the nodes that use random numbers.
pub(crate) const SEED: ParamSpec = ParamSpec {
    name: "seed",
    doc: "seed of the random number generator: the same seed gives bit-identical output",
    kind: ParamKind::Int {
        min: 0,
        max: 4_294_967_295,
        default: 1,
    },
    unit: Unit::None,
    live: false,
};

static BUILTIN: &[NodeType] = &[
    output::TYPE,
    input::TYPE,
    gain::TYPE,
    mix::TYPE,
    sine::TYPE,
    noise::TYPE,
    karplus::TYPE,
    strings::TYPE,
    biquad::TYPE,
    spectral_compressor::TYPE,
    synth::TYPE,
    metronome::TYPE,
];

/// Every built-in node type of this crate, in the order the reference lists them.
///
/// ```
/// let names: Vec<&str> = downbeat_nodes::node_types().iter().map(|t| t.name).collect();
/// assert!(names.contains(&"sine"));
/// ```
pub fn node_types() -> &'static [NodeType] {
    BUILTIN
}

/// The built-in node type called `name`.
///
/// ```
/// assert_eq!(downbeat_nodes::node_type("gain").unwrap().name, "gain");
/// assert!(downbeat_nodes::node_type("no-such-type").is_none());
/// ```
pub fn node_type(name: &str) -> Option<&'static NodeType> {
    BUILTIN.iter().find(|t| t.name == name)
}

/// A [`ParamError::Invalid`] for parameter `name`.
pub(crate) fn invalid(name: &str, message: impl Into<String>) -> ParamError {
    ParamError::Invalid {
        name: name.to_string(),
        message: message.into(),
    }
}

/// Checks a channel count given directly to a constructor.
pub(crate) fn check_channels(channels: usize) -> Result<(), ParamError> {
    if (1..=32).contains(&channels) {
        Ok(())
    } else {
        Err(invalid(
            "channels",
            format!("got {channels}, expected an integer from 1 to 32"),
        ))
    }
}

/// A small deterministic random number generator (PCG32, O'Neill 2014): 64-bit state, one
/// of 2^63 independent streams selected at seeding, 32-bit outputs. No allocation, no
/// system calls, identical sequence on every platform.
#[derive(Clone, Debug)]
pub(crate) struct Pcg32 {
    state: u64,
    inc: u64,
}

impl Pcg32 {
    const MULT: u64 = 6_364_136_223_846_793_005;

    /// The generator for `seed` on stream `stream` (e.g. a channel index).
    pub(crate) fn new(seed: u64, stream: u64) -> Self {
        let mut rng = Self {
            state: 0,
            inc: (stream << 1) | 1,
        };
        rng.next_u32();
        rng.state = rng.state.wrapping_add(seed);
        rng.next_u32();
        rng
    }

    /// The next 32 random bits.
    pub(crate) fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(Self::MULT).wrapping_add(self.inc);
        Self::output(old)
    }

    /// The 32 bits the generator outputs for the state `old` (the XSH RR permutation).
    #[inline(always)]
    pub(crate) fn output(old: u64) -> u32 {
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }

    /// A uniform sample in the open interval (-1, 1), symmetric around 0 (its mean is exactly
    /// zero over the generator's period).
    pub(crate) fn bipolar(&mut self) -> f64 {
        // 24 random bits -> k in 0..2^24; (k + 0.5) / 2^23 - 1 lies in (-1, 1).
        let k = f64::from(self.next_u32() >> 8);
        (k + 0.5) * (1.0 / 8_388_608.0) - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcg32_matches_reference_sequence() {
        // Reference values from the PCG paper's demo (seed 42, stream 54).
        let mut rng = Pcg32::new(42, 54);
        let got: Vec<u32> = (0..6).map(|_| rng.next_u32()).collect();
        assert_eq!(
            got,
            [0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e]
        );
    }

    #[test]
    fn bipolar_stays_inside_unit_interval() {
        let mut rng = Pcg32::new(7, 0);
        for _ in 0..100_000 {
            let x = rng.bipolar();
            assert!(x > -1.0 && x < 1.0);
        }
    }
}
