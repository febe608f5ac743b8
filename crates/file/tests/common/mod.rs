//! Test files made at test time with `sox` and `ffmpeg` (software we did not write), and their
//! decodes by the same tools. A missing tool fails the test: it never skips to green.
// Reference signals and measurements may use the platform's math; the engine may not.
#![allow(clippy::disallowed_methods)]
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// A file format the tests make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Wav16,
    Wav24,
    Wav32,
    WavFloat,
    Flac16,
    Flac24,
    Vorbis,
    Mp3,
}

impl Format {
    pub const ALL: [Format; 8] = [
        Format::Wav16,
        Format::Wav24,
        Format::Wav32,
        Format::WavFloat,
        Format::Flac16,
        Format::Flac24,
        Format::Vorbis,
        Format::Mp3,
    ];
    pub const LOSSLESS: [Format; 6] = [
        Format::Wav16,
        Format::Wav24,
        Format::Wav32,
        Format::WavFloat,
        Format::Flac16,
        Format::Flac24,
    ];

    pub fn ext(self) -> &'static str {
        match self {
            Format::Wav16 | Format::Wav24 | Format::Wav32 | Format::WavFloat => "wav",
            Format::Flac16 | Format::Flac24 => "flac",
            Format::Vorbis => "ogg",
            Format::Mp3 => "mp3",
        }
    }

    /// Bits of the stored samples (lossless formats): one LSB is 2^-(bits-1).
    pub fn bits(self) -> u32 {
        match self {
            Format::Wav16 | Format::Flac16 => 16,
            Format::Wav24 | Format::Flac24 => 24,
            Format::Wav32 | Format::WavFloat => 32,
            Format::Vorbis | Format::Mp3 => 0,
        }
    }

    pub fn is_lossy(self) -> bool {
        matches!(self, Format::Vorbis | Format::Mp3)
    }
}

pub const RATES: [u32; 3] = [44_100, 48_000, 96_000];

/// The rates a format is tested at: MP3 (MPEG-1 layer III) stops at 48 kHz, so it has 32 kHz
/// instead of 96 kHz.
pub fn rates(format: Format) -> [u32; 3] {
    match format {
        Format::Mp3 => [32_000, 44_100, 48_000],
        _ => RATES,
    }
}
pub const CHANNELS: [usize; 2] = [1, 2];

/// One LSB of a file of `bits` bits (a float file: sox's 32-bit integer decode's LSB).
pub fn lsb(format: Format) -> f64 {
    2f64.powi(1 - format.bits() as i32)
}

/// Runs a tool; panics (fails the test) when it is missing or fails.
pub fn run(program: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| {
        panic!("`{program}` is needed by this test and could not run ({e}); install it (Debian: sox libsox-fmt-all ffmpeg)")
    });
    assert!(
        out.status.success(),
        "`{program} {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The folder this test process makes its files in (removed by the OS's tmp cleaning; small).
pub fn dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("downbeat-file-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

/// The test signal's sox `synth` arguments: a different sine sweep on each channel (up, down,
/// ...), so channels differ and the whole band is used, faded in and out over 20 ms so that the
/// file has no step at either end (a step is not band-limited: two resamplers with different
/// transition bands ring differently after it).
fn synth_args(rate: u32, channels: usize, seconds: f64) -> Vec<String> {
    let top = (rate as f64 * 0.45).min(20_000.0) as u32;
    let mut args: Vec<String> = vec!["synth".into(), format!("{seconds}")];
    for c in 0..channels {
        let low = 50 + 100 * c as u32;
        args.push("sine".into());
        args.push(if c % 2 == 0 {
            format!("{low}-{top}")
        } else {
            format!("{top}-{low}")
        });
    }
    // Headroom: lossy coding overshoots, and symphonia's MP3 and Vorbis decoders clamp to ±1
    // where ffmpeg's do not.
    args.extend(["vol", "0.5", "fade", "h", "0.02"].map(String::from));
    args.push(format!("{seconds}"));
    args.push("0.02".into());
    args
}

/// Makes (once per process) a file of `format` at `rate` with `channels`, `seconds` long; WAV
/// and FLAC with `sox`, Vorbis and MP3 with `ffmpeg` from a sox-made float WAV.
pub fn make(format: Format, rate: u32, channels: usize, seconds: f64) -> PathBuf {
    let name = format!("{format:?}-{rate}-{channels}-{seconds}.{}", format.ext());
    let path = dir().join(name);
    if path.exists() {
        return path;
    }
    let tmp = dir().join(format!(
        "tmp-{}",
        path.file_name().unwrap().to_str().unwrap()
    ));
    let synth = synth_args(rate, channels, seconds);
    let synth: Vec<&str> = synth.iter().map(String::as_str).collect();
    let r = rate.to_string();
    let c = channels.to_string();
    let sox_out = |bits: &str, encoding: &str, out: &Path| {
        let mut args = vec!["-D", "-n", "-r", &r, "-c", &c, "-b", bits, "-e", encoding];
        let out = out.to_str().unwrap();
        args.push(out);
        args.extend(&synth);
        run("sox", &args);
    };
    match format {
        Format::Wav16 | Format::Flac16 => sox_out("16", "signed-integer", &tmp),
        Format::Wav24 | Format::Flac24 => sox_out("24", "signed-integer", &tmp),
        Format::Wav32 => sox_out("32", "signed-integer", &tmp),
        Format::WavFloat => sox_out("32", "floating-point", &tmp),
        Format::Vorbis | Format::Mp3 => {
            let wav = dir().join(format!("src-{rate}-{channels}-{seconds}.wav"));
            sox_out("32", "floating-point", &wav);
            let codec = if format == Format::Mp3 {
                "libmp3lame"
            } else {
                "libvorbis"
            };
            let (q, qv) = if format == Format::Mp3 {
                ("-b:a", "192k")
            } else {
                ("-q:a", "6")
            };
            run(
                "ffmpeg",
                &[
                    "-hide_banner",
                    "-loglevel",
                    "error",
                    "-y",
                    "-i",
                    wav.to_str().unwrap(),
                    "-c:a",
                    codec,
                    q,
                    qv,
                    "-f",
                    if format == Format::Mp3 { "mp3" } else { "ogg" },
                    tmp.to_str().unwrap(),
                ],
            );
        }
    }
    std::fs::rename(&tmp, &path).unwrap();
    path
}

/// `sox`'s decode of `path` as 32-bit integers, scaled to ±1 in f64 (sox's own float output
/// rounds to 2^-24, coarser than a 32-bit file's LSB).
pub fn sox_decode(path: &Path) -> Vec<f64> {
    run(
        "sox",
        &[
            path.to_str().unwrap(),
            "-t",
            "raw",
            "-e",
            "signed-integer",
            "-b",
            "32",
            "-",
        ],
    )
    .chunks_exact(4)
    .map(|b| f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])) / 2f64.powi(31))
    .collect()
}

/// `sox`'s decode of `path` resampled to `rate` with its very-high-quality `rate -v`.
pub fn sox_resample(path: &Path, rate: u32) -> Vec<f32> {
    let r = rate.to_string();
    f32s(&run(
        "sox",
        &[
            path.to_str().unwrap(),
            "-t",
            "raw",
            "-e",
            "floating-point",
            "-b",
            "32",
            "-",
            "rate",
            "-v",
            &r,
        ],
    ))
}

/// `ffmpeg`'s decode of `path`: interleaved f32 at the file's rate and channel count.
pub fn ffmpeg_decode(path: &Path) -> Vec<f32> {
    f32s(&run(
        "ffmpeg",
        &[
            "-hide_banner",
            "-loglevel",
            "error",
            "-i",
            path.to_str().unwrap(),
            "-f",
            "f32le",
            "-",
        ],
    ))
}

/// Root-mean-square of a signal.
pub fn rms(x: &[f32]) -> f64 {
    (x.iter().map(|&v| f64::from(v) * f64::from(v)).sum::<f64>() / x.len().max(1) as f64).sqrt()
}

/// `20 log10(rms(a - b) / rms(b))`.
pub fn residual_db(a: &[f32], b: &[f32]) -> f64 {
    let diff: Vec<f32> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    20.0 * (rms(&diff) / rms(b)).log10()
}

/// An engine playing `node` (two channels) straight into its output.
pub fn player_engine(node: downbeat_file::Player, rate: u32, block: usize) -> downbeat::Engine {
    use downbeat_graph::{CompileConfig, Graph};
    use downbeat_nodes::Output;
    let mut g = Graph::new();
    let p = g.add("p", node);
    let out = g.add("out", Output::new(2));
    g.connect(p, out);
    g.set_output(out);
    downbeat::Engine::new(
        g.compile(CompileConfig {
            sample_rate: rate,
            max_block: block,
        })
        .unwrap(),
    )
}
