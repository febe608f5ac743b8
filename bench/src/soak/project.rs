//! The soak's project: fanin84's nodes at 64-frame blocks, a synth and a plucked string
//! for the MIDI file, and a looping `player`, mixed; in two variants the control thread
//! alternates between (a live edit: one node more or less, a filter moved).

use std::path::{Path, PathBuf};

use super::{repo_file, BLOCK};

/// fanin84's compressors: `fft_size = 2048`, `overlap = 8`, so each does its FFT work once
/// every `2048 / 8` frames, and all of them in the same block.
pub const HOP_FRAMES: usize = 2048 / 8;

/// The player's file: rate (the project runs at 44.1 kHz, so the player resamples) and
/// length. Shorter than the second between two swaps, so that every schedule's player
/// reaches its loop point and wraps at least once before it is replaced.
const PLAYER_RATE: u32 = 48_000;
const PLAYER_SECONDS: f64 = 0.6;
/// Where the player's loop starts again, in seconds.
const LOOP_START: f64 = 0.1;

/// The soak's files, all in its working folder but the MIDI file.
#[derive(Clone, Debug)]
pub struct Files {
    /// The project file the control thread rewrites and reloads.
    pub project: PathBuf,
    /// The two versions of the project's text: `[0]` is the one the run starts with.
    pub variants: [String; 2],
    /// The MIDI file the synth plays on loop.
    pub midi: PathBuf,
    /// The recording of the run.
    pub recording: PathBuf,
}

/// Writes the player's file and the project (its first variant) into `dir`.
pub fn write(dir: &Path) -> Result<Files, String> {
    let fanin = std::fs::read_to_string(repo_file("examples/projects/fanin84.toml"))
        .map_err(|e| format!("cannot read fanin84.toml: {e}"))?;
    let variants = [variant(&fanin, false)?, variant(&fanin, true)?];
    write_player_file(&dir.join("player.wav"))?;
    let project = dir.join("soak.toml");
    std::fs::write(&project, &variants[0])
        .map_err(|e| format!("cannot write {}: {e}", project.display()))?;
    Ok(Files {
        project,
        variants,
        midi: repo_file("examples/projects/tune.mid"),
        recording: dir.join("recording.wav"),
    })
}

/// Replaces the one occurrence of `from` in `text`; an error when fanin84.toml (which a
/// script generates) no longer has the shape this module edits.
fn replace_once(text: &str, from: &str, to: &str) -> Result<String, String> {
    match text.matches(from).count() {
        1 => Ok(text.replacen(from, to, 1)),
        n => Err(format!(
            "fanin84.toml has {n} occurrences of {from:?} where the soak expects one"
        )),
    }
}

/// fanin84 with its output going into a mix with the soak's instruments and player; with
/// `edited`, one more node (a quiet sine into the mix) and the synth's filter moved.
fn variant(fanin: &str, edited: bool) -> Result<String, String> {
    // The hop the late-block bound rests on (see `checks`): refuse a fanin84 whose
    // compressors hop differently.
    for setting in ["fft_size = 2048", "overlap = 8"] {
        if !fanin.contains(setting) {
            return Err(format!(
                "fanin84.toml's compressors no longer have {setting}"
            ));
        }
    }
    let text = replace_once(
        fanin,
        "block_size = 512\n",
        &format!("block_size = {BLOCK}\n"),
    )?;
    let extra_edge = if edited {
        "    \"extra -> mix\",\n"
    } else {
        ""
    };
    let text = replace_once(
        &text,
        "    \"l4_00 -> out\",\n",
        &format!(
            "    \"l4_00 -> mix\",\n    \"keys -> lowpass -> mix\",\n    \"pluck -> mix\",\n    \
             \"file -> mix\",\n    \"mix -> out\",\n{extra_edge}"
        ),
    )?;
    let mut text = replace_once(&text, "[nodes.out]\ntype = \"output\"\n", "")?;
    let lowpass = if edited { 3000.0 } else { 4000.0 };
    text.push_str(&format!(
        r#"# The soak's own nodes (bench/src/soak/project.rs).
[nodes.keys]
type = "synth"
wave = "saw"
voices = 8
attack = 0.005
release = 0.25
cutoff = 2500.0
amp = 0.25

[nodes.lowpass]
type = "biquad"
mode = "lowpass"
freq = {lowpass:.1}
q = 0.707

[nodes.pluck]
type = "karplus"
length = 0.6
interval = 1.0
amp = 0.3

[nodes.file]
type = "player"
path = "player.wav"
loop = true
loop_start = {LOOP_START}
cues = [0.0, {LOOP_START}]
gain = 0.5

[nodes.mix]
type = "mix"
gain_db = -6.0

[nodes.out]
type = "output"
"#
    ));
    if edited {
        text.push_str("\n[nodes.extra]\ntype = \"sine\"\nfreq = 330.0\namp = 0.02\n");
    }
    // Last: a TOML table after the nodes.
    text.push_str("\n[midi.cc]\n74 = \"keys.cutoff\"\n");
    Ok(text)
}

/// Writes the player's file: a 16-bit stereo chord of two decaying partials, so that a
/// wrap is audible and the file is never silent.
fn write_player_file(path: &Path) -> Result<(), String> {
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: PLAYER_RATE,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let failed = |e: hound::Error| format!("cannot write {}: {e}", path.display());
    let mut w = hound::WavWriter::create(path, spec).map_err(failed)?;
    let frames = (PLAYER_SECONDS * f64::from(PLAYER_RATE)) as usize;
    for i in 0..frames {
        let t = i as f64 / f64::from(PLAYER_RATE);
        let envelope = 0.3 + 0.7 * (-4.0 * t).exp();
        let tau = std::f64::consts::TAU;
        let l = envelope * 0.4 * (tau * 220.0 * t).sin();
        let r = envelope * 0.4 * (tau * 330.0 * t).sin();
        for x in [l, r] {
            w.write_sample((x * f64::from(i16::MAX)) as i16)
                .map_err(failed)?;
        }
    }
    w.finalize().map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_variants_build_and_keep_every_node_events_address() {
        let dir = std::env::temp_dir().join(format!("soak-project-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = write(&dir).unwrap();
        let mut keys = Vec::new();
        for text in &files.variants {
            std::fs::write(&files.project, text).unwrap();
            let p = downbeat::project::Project::load(&files.project).unwrap();
            let s = p.build().unwrap();
            assert_eq!(s.config().max_block, BLOCK);
            let table = s.param_table();
            keys.push(
                ["keys", "file", "mix", "lowpass", "l4_00"]
                    .map(|n| table.node_key(n).unwrap_or_else(|| panic!("{n}"))),
            );
        }
        // A node the OSC sender or the sequencer addresses has the same key in both
        // variants, so no swap makes an event stale.
        assert_eq!(keys[0], keys[1]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_fanin84_of_another_shape_is_refused() {
        let err = variant("block_size = 512\nfft_size = 2048\noverlap = 8\n", false).unwrap_err();
        assert!(err.contains("l4_00 -> out"), "{err}");
    }
}
