//! The `sampler` node type of project files: decodes the samples a project names when it
//! loads, resampled to the project's rate, and builds a
//! [`downbeat_nodes::Sampler`] from them. Nothing touches the disk after that.
//!
//! ```toml
//! [nodes.kit]            # a drum kit: note numbers or names to files
//! type = "sampler"
//! samples = { 36 = "kick.wav", D2 = "snare.wav", "F#2" = "hat.wav" }
//!
//! [nodes.keys]           # one sample across the keyboard
//! type = "sampler"
//! sample = "piano-c4.flac"
//! root = 60
//! mode = "gated"
//! release = 0.3
//! ```
//!
//! A file that is missing, unsupported or damaged, a key that is not a note, a note named
//! twice (`36` and `"C2"`): the node is refused at load with a message naming the file or
//! the note. A file's channels are mapped to the node's by [`map_channels`] (a mono file
//! stays mono and plays on every channel).

use std::path::Path;

use downbeat_graph::{Node, NodeConfig, NodeFactory, ParamError, ParamSpec, ParamValue, Params};
use downbeat_nodes::{
    note_name, parse_note, PlayMode, Sample, SampleSet, Sampler, SamplerSettings,
};

use crate::{decode_all, map_channels};

/// The `sampler` node type (`type = "sampler"`), which loads its samples from files.
#[derive(Clone, Copy, Debug, Default)]
pub struct SamplerType;

fn invalid(name: &str, message: impl Into<String>) -> ParamError {
    ParamError::Invalid {
        name: name.to_string(),
        message: message.into(),
    }
}

/// Decodes `path` at `rate` for a node of `channels` channels: a mono file stays mono (the
/// sampler plays it on every channel), others are mapped to `channels`.
fn load(param: &str, path: &Path, rate: u32, channels: usize) -> Result<Sample, ParamError> {
    let audio = decode_all(path, rate).map_err(|e| invalid(param, e.to_string()))?;
    let (data, ch) = if audio.channels == 1 || audio.channels == channels {
        (audio.samples, audio.channels)
    } else {
        let mut mapped = vec![0.0; audio.frames() * channels];
        map_channels(&audio.samples, audio.channels, &mut mapped, channels);
        (mapped, channels)
    };
    Sample::from_interleaved(&data, ch, rate)
        .map_err(|e| invalid(param, format!("{}: {e}", path.display())))
}

/// The kit's notes, each with its file, checked (every key a note, no note twice) before
/// any file is read.
fn kit_notes(map: &[(String, String)]) -> Result<Vec<(u8, &str)>, ParamError> {
    let mut notes: Vec<(u8, &str, &str)> = Vec::with_capacity(map.len());
    for (key, path) in map {
        let note = parse_note(key).ok_or_else(|| {
            invalid(
                "samples",
                format!(
                    "`{key}` is not a note: give a MIDI note number from 0 to 127 or a name \
                     such as C2, F#2 or Bb1 (60 is C4)"
                ),
            )
        })?;
        if let Some((_, first, _)) = notes.iter().find(|(n, _, _)| *n == note) {
            return Err(invalid(
                "samples",
                format!(
                    "`{first}` and `{key}` both name note {note} ({}): give each note one \
                     sample",
                    note_name(note)
                ),
            ));
        }
        notes.push((note, key, path));
    }
    if notes.is_empty() {
        return Err(invalid(
            "samples",
            "the kit is empty: map notes to files, e.g. { 36 = \"kick.wav\" }",
        ));
    }
    Ok(notes.into_iter().map(|(n, _, p)| (n, p)).collect())
}

impl NodeFactory for SamplerType {
    fn name(&self) -> &str {
        "sampler"
    }

    fn doc(&self) -> &str {
        "plays samples held in memory on notes: a kit (`samples`, notes to files) or one \
         `sample` pitched across the keyboard from `root`; files decoded at load"
    }

    fn params(&self) -> &[ParamSpec] {
        Sampler::PARAMS
    }

    fn create(
        &self,
        params: Vec<(String, ParamValue)>,
        cfg: &NodeConfig,
    ) -> Result<Box<dyn Node>, ParamError> {
        let given = |name: &str| params.iter().any(|(n, _)| n == name);
        let kit = given("samples");
        let sample_given = given("sample");
        if kit && sample_given {
            return Err(invalid(
                "samples",
                "give either `sample` (one sample across the keyboard) or `samples` (a kit), \
                 not both",
            ));
        }
        let specs = if kit {
            Sampler::KIT_PARAMS
        } else {
            Sampler::KEYBOARD_PARAMS
        };
        let p = Params::validate(specs, params).map_err(|e| match e {
            ParamError::Invalid { name, .. } if name == "sample" && !sample_given => invalid(
                "sample",
                "required: give `sample = \"file\"` (one sample across the keyboard) or \
                 `samples = { 36 = \"kick.wav\" }` (a kit)",
            ),
            other => other,
        })?;
        let channels = p.int("channels") as usize;
        let rate = cfg.sample_rate;
        let set = if kit {
            let mut hits = Vec::new();
            for (note, path) in kit_notes(p.path_map("samples"))? {
                hits.push((note, load("samples", Path::new(path), rate, channels)?));
            }
            SampleSet::kit(hits)
        } else {
            let sample = load("sample", p.path("sample"), rate, channels)?;
            SampleSet::keyboard(sample, p.float("root") as f32)
        }
        .map_err(|e| invalid(if kit { "samples" } else { "root" }, e.to_string()))?;
        let mode = PlayMode::from_name(p.choice("mode"))
            .ok_or_else(|| invalid("mode", format!("got \"{}\"", p.choice("mode"))))?;
        let settings = SamplerSettings {
            voices: p.int("voices") as usize,
            mode,
            release: p.float("release"),
            gain: p.float("gain") as f32,
        };
        let sampler = Sampler::new(channels, rate, set, &settings)
            .map_err(|e| invalid(if kit { "samples" } else { "sample" }, e.to_string()))?;
        Ok(Box::new(sampler))
    }
}
