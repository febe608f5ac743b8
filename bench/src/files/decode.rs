//! Decode throughput per format (whole-process CPU time of our `decode-file`, `sox` and
//! `ffmpeg` on the same file) and resampler speed (ours against rubato's `SincFixedIn` in
//! process, and against `sox rate -v` as whole processes).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use downbeat_file::Resampler;
use rubato::{
    Resampler as _, SincFixedIn, SincInterpolationParameters, SincInterpolationType, WindowFunction,
};

use super::quality;
use crate::report::{alternating, Better, Report};
use crate::Common;

/// Formats timed: (name, extension, how the file is made from the source WAV).
const FORMATS: [(&str, &str); 5] = [
    ("wav16", "wav"),
    ("wav24", "wav"),
    ("flac", "flac"),
    ("vorbis", "ogg"),
    ("mp3", "mp3"),
];

fn seconds(quick: bool) -> u32 {
    if quick {
        2
    } else {
        60
    }
}

fn run_tool(program: &str, args: &[&str]) {
    let status = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .unwrap_or_else(|e| {
            panic!("bench files needs `{program}` ({e}); Debian: sox libsox-fmt-all ffmpeg")
        });
    assert!(status.success(), "`{program} {}` failed", args.join(" "));
}

/// Makes the test files (stereo, 44.1 kHz, sweeps and noise) in a fresh temporary folder.
pub fn make_files(quick: bool) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("downbeat-bench-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    let secs = seconds(quick).to_string();
    let src = dir.join("src.wav");
    let s = src.to_str().unwrap();
    run_tool(
        "sox",
        &[
            "-D",
            "-n",
            "-r",
            "44100",
            "-c",
            "2",
            "-b",
            "24",
            s,
            "synth",
            &secs,
            "sine",
            "50-18000",
            "pinknoise",
            "vol",
            "0.4",
        ],
    );
    for (name, ext) in FORMATS {
        let out = dir.join(format!("{name}.{ext}"));
        let o = out.to_str().unwrap();
        match name {
            "wav16" => run_tool("sox", &["-D", s, "-b", "16", o]),
            "wav24" => run_tool("sox", &[s, o]),
            "flac" => run_tool("sox", &[s, "-b", "16", o]),
            "vorbis" => run_tool(
                "ffmpeg",
                &[
                    "-loglevel",
                    "error",
                    "-y",
                    "-i",
                    s,
                    "-c:a",
                    "libvorbis",
                    "-q:a",
                    "6",
                    o,
                ],
            ),
            _ => run_tool(
                "ffmpeg",
                &[
                    "-loglevel",
                    "error",
                    "-y",
                    "-i",
                    s,
                    "-c:a",
                    "libmp3lame",
                    "-b:a",
                    "192k",
                    o,
                ],
            ),
        }
    }
    dir
}

/// CPU time (user + system) of the children reaped so far, in seconds.
fn children_cpu() -> f64 {
    // SAFETY: getrusage writes one rusage into the zeroed struct we own.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut u);
        u
    };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(usage.ru_utime) + t(usage.ru_stime)
}

/// Whole-process CPU time of one command, in milliseconds.
fn cpu_ms(program: &Path, args: &[&str]) -> f64 {
    let before = children_cpu();
    let status = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .unwrap_or_else(|e| panic!("cannot run {} ({e})", program.display()));
    assert!(
        status.success(),
        "{} {} failed",
        program.display(),
        args.join(" ")
    );
    (children_cpu() - before) * 1e3
}

/// Our decoder as a child process: `decode-file`, built beside this binary.
fn decode_file_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("own path");
    let bin = exe.with_file_name("decode-file");
    assert!(
        bin.exists(),
        "{} is missing: build with `cargo build --release -p downbeat-bench`",
        bin.display()
    );
    bin
}

const TOOLS: [&str; 3] = ["downbeat", "sox", "ffmpeg"];

fn tool_cmd(tool: &str, file: &str, rate: Option<&str>) -> (PathBuf, Vec<String>) {
    let own: Vec<String> = match rate {
        Some(r) => vec![file.into(), r.into()],
        None => vec![file.into()],
    };
    match tool {
        "downbeat" => (decode_file_bin(), own),
        "sox" => {
            let mut a: Vec<String> = [
                file,
                "-t",
                "raw",
                "-e",
                "floating-point",
                "-b",
                "32",
                "/dev/null",
            ]
            .map(String::from)
            .to_vec();
            if let Some(r) = rate {
                a.extend(["rate", "-v", r].map(String::from));
            }
            (PathBuf::from("sox"), a)
        }
        _ => {
            let a = [
                "-nostdin",
                "-loglevel",
                "error",
                "-i",
                file,
                "-f",
                "f32le",
                "-y",
                "/dev/null",
            ];
            (PathBuf::from("ffmpeg"), a.map(String::from).to_vec())
        }
    }
}

/// Case `decode_<format>`: CPU ms per file for each tool, alternating order.
pub fn decode(common: &Common, dir: &Path, report: &mut Report) {
    let runs = common.runs().max(if common.quick { 1 } else { 5 });
    for (name, ext) in FORMATS {
        let file = dir.join(format!("{name}.{ext}"));
        let file = file.to_str().unwrap();
        let mut times = vec![Vec::new(); TOOLS.len()];
        for k in 0..runs {
            for i in alternating(&[0, 1, 2], k) {
                let (prog, args) = tool_cmd(TOOLS[i], file, None);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                times[i].push(cpu_ms(&prog, &args));
            }
        }
        let case = format!("decode_{name}");
        for (tool, t) in TOOLS.iter().zip(&times) {
            report.add(&case, tool, "cpu_ms", t);
        }
        for rival in ["sox", "ffmpeg"] {
            report.ratio(&case, &case, "downbeat", rival, Better::Lower);
        }
    }
    report.notes.push(format!(
        "decode: stereo 44.1 kHz, {} s per file; whole-process CPU time (user + system) of \
         `decode-file F`, `sox F -t raw -e floating-point -b 32 /dev/null`, `ffmpeg -i F -f \
         f32le /dev/null`; {runs} runs, alternating order",
        seconds(common.quick)
    ));
}

/// Interleaved stereo test signal for the in-process resampler timing.
fn signal(frames: usize) -> Vec<f32> {
    (0..frames * 2)
        .map(|i| {
            let t = (i / 2) as f32 / 44_100.0;
            0.3 * (t * (300.0 + 500.0 * (i % 2) as f32) * std::f32::consts::TAU).sin()
        })
        .collect()
}

/// Ours: 1024-frame input blocks through one `Resampler`, seconds.
fn time_ours(input: &[f32]) -> f64 {
    let mut r = Resampler::new(2, 44_100, 48_000).unwrap();
    let mut out = vec![0.0f32; 2 * 1200];
    let t = Instant::now();
    let mut check = 0.0;
    for chunk in input.chunks(2 * 1024) {
        let mut used = 0;
        while used * 2 < chunk.len() {
            let (u, w) = r.process(&chunk[used * 2..], &mut out);
            used += u;
            check += out[..w * 2].first().copied().unwrap_or(0.0);
        }
    }
    std::hint::black_box(check);
    t.elapsed().as_secs_f64()
}

/// A setting of rubato's `SincFixedIn`: filter length, oversampling, cubic (else linear)
/// interpolation between the oversampled points, and `f64` (else `f32`) samples; cutoff 0.95
/// and the Blackman-Harris window throughout, as its documentation recommends.
#[derive(Clone, Copy, Debug)]
struct RubatoSetting {
    sinc_len: usize,
    oversampling: usize,
    cubic: bool,
    double: bool,
}

impl RubatoSetting {
    /// What rubato's documentation recommends: 256 taps, oversampling 256, linear, `f32`,
    /// the first rung of [`RUBATO_LADDER`].
    const RECOMMENDED: Self = RUBATO_LADDER[0];

    /// The residual of the quality sweep through it, in dB.
    fn quality_db(self) -> f64 {
        if self.double {
            quality::rubato_db::<f64>(self.params())
        } else {
            quality::rubato_db::<f32>(self.params())
        }
    }

    /// Seconds to resample `input` (interleaved stereo) through it.
    fn time(self, input: &[f32]) -> f64 {
        if self.double {
            time_rubato::<f64>(input, self.params())
        } else {
            time_rubato::<f32>(input, self.params())
        }
    }

    fn params(self) -> SincInterpolationParameters {
        SincInterpolationParameters {
            sinc_len: self.sinc_len,
            f_cutoff: 0.95,
            interpolation: if self.cubic {
                SincInterpolationType::Cubic
            } else {
                SincInterpolationType::Linear
            },
            oversampling_factor: self.oversampling,
            window: WindowFunction::BlackmanHarris2,
        }
    }
}

impl std::fmt::Display for RubatoSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.cubic { "cubic" } else { "linear" };
        let sample = if self.double { "f64" } else { "f32" };
        write!(
            f,
            "sinc_len {}, oversampling {}, {kind}, {sample}, cutoff 0.95, BlackmanHarris2",
            self.sinc_len, self.oversampling
        )
    }
}

/// rubato's settings from the cheapest up, for the first that resamples as well as ours:
/// in `f32`, as ours computes, then in `f64`. The first is the recommended one.
const RUBATO_LADDER: [RubatoSetting; 12] = {
    const fn s(sinc_len: usize, oversampling: usize, cubic: bool, double: bool) -> RubatoSetting {
        RubatoSetting {
            sinc_len,
            oversampling,
            cubic,
            double,
        }
    }
    [
        s(256, 256, false, false),
        s(256, 1024, false, false),
        s(256, 256, true, false),
        s(512, 256, true, false),
        s(512, 1024, true, false),
        s(1024, 1024, true, false),
        s(256, 256, false, true),
        s(256, 1024, false, true),
        s(256, 256, true, true),
        s(512, 256, true, true),
        s(512, 1024, true, true),
        s(1024, 1024, true, true),
    ]
};

/// rubato's `SincFixedIn` with `params` computing in `T`, 1024-frame chunks, seconds. The
/// input is made planar (and `T`) before the clock starts.
fn time_rubato<T: quality::Precision>(input: &[f32], params: SincInterpolationParameters) -> f64 {
    let mut r = SincFixedIn::<T>::new(48_000.0 / 44_100.0, 1.0, params, 1024, 2).unwrap();
    let frames = input.len() / 2;
    let planar: Vec<Vec<T>> = (0..2)
        .map(|c| (0..frames).map(|i| T::of(input[i * 2 + c])).collect())
        .collect();
    let mut out = r.output_buffer_allocate(true);
    let t = Instant::now();
    let mut check = 0.0f32;
    let mut pos = 0;
    while pos + 1024 <= frames {
        let chunk = [&planar[0][pos..pos + 1024], &planar[1][pos..pos + 1024]];
        let (_, w) = r.process_into_buffer(&chunk, &mut out, None).unwrap();
        check += out[0][..w].first().map_or(0.0, |&x| x.to_f32());
        pos += 1024;
    }
    std::hint::black_box(check);
    t.elapsed().as_secs_f64()
}

/// Case `resample`: 44.1 -> 48 kHz stereo, ours against rubato (in process, ms per minute of
/// audio) and against `sox rate -v` (whole processes decoding the 24-bit WAV and resampling).
pub fn resample(common: &Common, dir: &Path, report: &mut Report) {
    let runs = common.runs().max(if common.quick { 1 } else { 5 });
    let secs = seconds(common.quick) as usize;
    let input = signal(44_100 * secs);
    let per_minute = 60.0 / secs as f64 * 1e3;
    // Quality first, measured alike: rubato's first setting at least as good as ours.
    let ours_db = quality::ours_db();
    let mut ladder = Vec::new();
    let mut tried = RUBATO_LADDER.into_iter().map(|p| {
        let db = p.quality_db();
        ladder.push(format!("{p}: {db:.1} dB"));
        (p, db)
    });
    // The ladder's first rung is the recommended setting: its quality is measured once.
    let first = tried.next().expect("the ladder has rungs");
    let recommended_db = first.1;
    let (equal, equal_db) = std::iter::once(first)
        .chain(tried)
        .find(|&(_, db)| db <= ours_db)
        .unzip();
    report.notes.push(format!(
        "resample quality (a 20 Hz-20 kHz sweep, residual at the best delay): ours {ours_db:.1} dB; \
         rubato {}",
        ladder.join("; ")
    ));
    report.add("resample_quality_db", "downbeat", "dB", &[ours_db]);
    report.add("resample_quality_db", "rubato", "dB", &[recommended_db]);
    if let Some(db) = equal_db {
        report.add("resample_quality_db", "rubato at our quality", "dB", &[db]);
    }
    let (mut ours, mut rubato, mut rubato_equal) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..runs {
        for i in alternating(&[0, 1, 2], k) {
            match (i, &equal) {
                (0, _) => ours.push(time_ours(&input) * per_minute),
                (1, _) => rubato.push(RubatoSetting::RECOMMENDED.time(&input) * per_minute),
                (_, Some(p)) => rubato_equal.push(p.time(&input) * per_minute),
                (_, None) => {}
            }
        }
    }
    report.add("resample", "downbeat", "ms_per_min", &ours);
    report.add("resample", "rubato", "ms_per_min", &rubato);
    report.ratio("resample", "resample", "downbeat", "rubato", Better::Lower);
    if let Some(p) = &equal {
        report.add(
            "resample",
            "rubato at our quality",
            "ms_per_min",
            &rubato_equal,
        );
        report.ratio(
            "resample_equal_quality",
            "resample",
            "downbeat",
            "rubato at our quality",
            Better::Lower,
        );
        report.notes.push(format!(
            "resample at equal quality: rubato with {p} leaves the sweep's residual at {:.1} dB, \
             ours at {ours_db:.1} dB",
            equal_db.unwrap_or(f64::NAN)
        ));
    } else {
        report.notes.push(format!(
            "resample at equal quality: no rubato setting tried reaches ours ({ours_db:.1} dB); \
             the recommended one leaves {recommended_db:.1} dB"
        ));
    }
    let file = dir.join("wav24.wav");
    let file = file.to_str().unwrap();
    let mut times = [Vec::new(), Vec::new()];
    for k in 0..runs {
        for i in alternating(&[0, 1], k) {
            let (prog, args) = tool_cmd(TOOLS[i], file, Some("48000"));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            times[i].push(cpu_ms(&prog, &args));
        }
    }
    report.add("resample_process", "downbeat", "cpu_ms", &times[0]);
    report.add("resample_process", "sox", "cpu_ms", &times[1]);
    report.ratio(
        "resample",
        "resample_process",
        "downbeat",
        "sox",
        Better::Lower,
    );
    report.notes.push(format!(
        "resample: 44.1 -> 48 kHz stereo; in process ({secs} s of audio, 1024-frame blocks, \
         reported per minute of audio) against rubato SincFixedIn (sinc_len 256, cutoff 0.95, \
         linear, oversampling 256, BlackmanHarris2); as processes, `decode-file F 48000` against \
         `sox F ... rate -v 48000`; {runs} runs, alternating order"
    ));
}
