//! Real LV2 instruments that need the worker, through the `downbeat` binary: synthv1 plays a
//! MIDI file at the right pitch (the spectrum's peak at the note's frequency) and avldrums
//! plays a drum pattern (sound starting at the pattern's times, silence before). Offline, the
//! node waits for the plugins' workers (avldrums loads its kit there), so the renders are
//! complete however slow the machine. A missing plugin fails the test (`scripts/deps.sh`
//! installs `synthv1-lv2` and `avldrums.lv2`).

// Built with the `lv2` feature only (crates/plugin/ci.sh turns it on).
#![cfg(feature = "lv2")]

mod support;

use std::path::Path;
use std::process::Command;

const SYNTH: &str = "http://synthv1.sourceforge.net/lv2";
const DRUMS: &str = "http://gareus.org/oss/lv2/avldrums#BlackPearl";
const RATE: usize = 48000;

/// Panics, failing the test, unless `uri` is installed (`lv2info` knows it); `package` is
/// the Debian package that installs it.
fn require(uri: &str, package: &str) {
    let lv2info = Command::new("lv2info").arg(uri).output();
    assert!(
        lv2info.is_ok_and(|o| o.status.success() && !o.stdout.is_empty()),
        "LV2 plugin <{uri}> (Debian package {package}) or lv2info (lilv-utils) is not \
         installed; `bash scripts/deps.sh` installs them"
    );
}

/// A format-0 Standard MIDI File at 120 bpm, 480 ticks per quarter note (a tick is 1/960 s):
/// `notes` are (channel, key, on tick, off tick).
fn midi_file(notes: &[(u8, u8, u32, u32)]) -> Vec<u8> {
    let mut events: Vec<(u32, [u8; 3])> = Vec::new();
    for &(ch, key, on, off) in notes {
        events.push((on, [0x90 | ch, key, 110]));
        events.push((off, [0x80 | ch, key, 64]));
    }
    events.sort_by_key(|e| e.0);
    let vlq = |mut v: u32, out: &mut Vec<u8>| {
        let mut bytes = vec![(v & 0x7f) as u8];
        v >>= 7;
        while v > 0 {
            bytes.push(0x80 | (v & 0x7f) as u8);
            v >>= 7;
        }
        out.extend(bytes.iter().rev());
    };
    let mut track = vec![0x00, 0xFF, 0x51, 0x03, 0x07, 0xA1, 0x20]; // 500000 us per quarter
    let mut now = 0;
    for (tick, msg) in events {
        vlq(tick - now, &mut track);
        track.extend_from_slice(&msg);
        now = tick;
    }
    track.extend_from_slice(&[0x00, 0xFF, 0x2F, 0x00]);
    let mut file = b"MThd\0\0\0\x06\0\0\0\x01\x01\xE0MTrk".to_vec();
    file.extend_from_slice(&(track.len() as u32).to_be_bytes());
    file.extend_from_slice(&track);
    file
}

/// Renders `uri` playing `midi` offline through the binary; the left channel.
fn play(name: &str, uri: &str, controls: &str, midi: &[u8]) -> Vec<f32> {
    let dir = support::tmp("lv2-instruments", name);
    std::fs::create_dir_all(&dir).unwrap();
    let project = dir.join("p.toml");
    std::fs::write(
        &project,
        format!(
            "sample_rate = {RATE}\nblock_size = 256\nedges = [\"inst -> out\"]\n\
             [nodes.inst]\ntype = \"lv2\"\nuri = \"{uri}\"\n{controls}\n\
             [nodes.out]\ntype = \"output\"\n"
        ),
    )
    .unwrap();
    let song = dir.join("song.mid");
    std::fs::write(&song, midi).unwrap();
    let wav = dir.join("out.wav");
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("run")
        .arg(&project)
        .args(["--device", "offline", "--midi"])
        .arg(&song)
        .arg("--out")
        .arg(&wav)
        // synthv1 starts a Qt application, which needs a display unless told otherwise.
        .env("QT_QPA_PLATFORM", "offscreen")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "downbeat run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    left(&wav)
}

fn left(wav: &Path) -> Vec<f32> {
    let (samples, channels) = support::read_wav(wav);
    samples.iter().step_by(channels).copied().collect()
}

/// The frequency (1 Hz steps, 50 Hz to 2 kHz) where `x`'s spectrum peaks.
fn peak_frequency(x: &[f32]) -> f64 {
    let mut best = (0.0, 0.0);
    for f in 50..2000 {
        let w = std::f64::consts::TAU * f as f64 / RATE as f64;
        let (mut re, mut im) = (0.0f64, 0.0f64);
        for (n, &s) in x.iter().enumerate() {
            let (sin, cos) = (w * n as f64).sin_cos();
            re += f64::from(s) * cos;
            im -= f64::from(s) * sin;
        }
        let mag = re * re + im * im;
        if mag > best.1 {
            best = (f as f64, mag);
        }
    }
    best.0
}

fn rms(x: &[f32]) -> f32 {
    (x.iter().map(|s| s * s).sum::<f32>() / x.len().max(1) as f32).sqrt()
}

#[test]
fn synthv1_plays_a_midi_file_at_the_notes_pitch() {
    require(SYNTH, "synthv1-lv2");
    // A4 (440 Hz) from 0.25 s to 1.25 s; the second oscillator, two octaves down in the
    // default patch, at the note's octave too.
    let out = play(
        "synthv1",
        SYNTH,
        "DCO2_OCTAVE = 0",
        &midi_file(&[(0, 69, 240, 1200)]),
    );
    assert!(out.len() >= RATE * 5 / 4, "{} frames", out.len());
    assert!(
        out[..RATE / 4].iter().all(|s| s.abs() < 1e-4),
        "sound before the note"
    );
    let held = &out[RATE / 2..RATE];
    assert!(rms(held) > 0.01, "the note sounds: rms {}", rms(held));
    let f = peak_frequency(held);
    assert!(
        (f - 440.0).abs() <= 2.0,
        "spectral peak at {f} Hz, expected 440"
    );
}

#[test]
fn avldrums_plays_a_drum_pattern_at_its_times() {
    require(DRUMS, "avldrums.lv2");
    // Kick, snare, kick, snare every half second from 0.25 s (ticks of 1/960 s).
    let hits = [(36, 240), (38, 720), (36, 1200), (38, 1680)];
    let notes: Vec<(u8, u8, u32, u32)> = hits.iter().map(|&(k, t)| (9, k, t, t + 96)).collect();
    let out = play("avldrums", DRUMS, "", &midi_file(&notes));
    assert!(
        out[..RATE / 4].iter().all(|s| s.abs() < 1e-4),
        "sound before the first hit"
    );
    let window = RATE * 30 / 1000;
    for (key, tick) in hits {
        let at = tick as usize * RATE / 960;
        let before = rms(&out[at - window..at]);
        let after = rms(&out[at..at + window]);
        assert!(
            after > 0.01 && after > 4.0 * before,
            "hit {key} at {at}: rms {before} before, {after} after"
        );
    }
}
