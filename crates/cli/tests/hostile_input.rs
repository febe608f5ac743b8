//! Hostile input from the outside: whatever bytes a project file, a `--midi` file or a
//! `player`'s file holds, `downbeat run --device offline --seconds 0.2` exits 0, 1 or 2
//! within seconds, with a message on stderr whenever it is not 0: never a panic (101), a
//! signal or a hang. The inputs are real seeds (the example projects, the MIDI files, the
//! audio seeds of `fuzz/seeds/audio_file`) cut short, bit-flipped, overwritten, spliced with
//! random bytes, or for projects with numbers swapped for extreme ones, by a fixed-seed RNG:
//! the same few hundred cases every run. The fuzz targets in `fuzz/` search the same code
//! in-process at length; this test holds the promise the user sees, process and all.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longer than any of these runs takes on a loaded machine (they take tens of
/// milliseconds): past it the run is a hang.
const TIMEOUT: Duration = Duration::from_secs(20);

/// SplitMix64: a small RNG of our own, so the cases are the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

/// Numbers a mutated project may hold in place of one of its own: the edges of every
/// parameter's range and of the types that carry them.
const EXTREMES: [&str; 16] = [
    "0",
    "-1",
    "1e308",
    "-1e308",
    "1e-300",
    "nan",
    "inf",
    "-inf",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967296",
    "65536",
    "8192",
    "384000",
    "0.0001",
    "127",
];

/// `seed` damaged one way, chosen by `rng`.
fn mutate(rng: &mut Rng, seed: &[u8], text: bool) -> Vec<u8> {
    let mut b = seed.to_vec();
    let kinds = if text { 6 } else { 5 };
    match rng.below(kinds) {
        // Cut short anywhere, the header included.
        0 => b.truncate(rng.below(b.len() + 1)),
        // A few bits flipped.
        1 if !b.is_empty() => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
        }
        // A run of bytes overwritten with random ones.
        2 if !b.is_empty() => {
            let at = rng.below(b.len());
            let n = (1 + rng.below(32)).min(b.len() - at);
            for x in &mut b[at..at + n] {
                *x = rng.byte();
            }
        }
        // Random bytes spliced in.
        3 => {
            let at = rng.below(b.len() + 1);
            let junk: Vec<u8> = (0..1 + rng.below(64)).map(|_| rng.byte()).collect();
            b.splice(at..at, junk);
        }
        // Nothing of the seed: random bytes.
        4 => b = (0..rng.below(512)).map(|_| rng.byte()).collect(),
        // A number of the text replaced by an extreme one, two times out of three with a
        // second one replaced too.
        _ => {
            for _ in 0..1 + rng.below(2) {
                let s = String::from_utf8_lossy(&b).into_owned();
                let numbers: Vec<(usize, usize)> = number_spans(&s);
                if numbers.is_empty() {
                    break;
                }
                let (start, end) = numbers[rng.below(numbers.len())];
                let with = EXTREMES[rng.below(EXTREMES.len())];
                b = format!("{}{with}{}", &s[..start], &s[end..]).into_bytes();
            }
        }
    }
    b
}

/// Byte ranges of the numeric literals of `s`.
fn number_spans(s: &str) -> Vec<(usize, usize)> {
    let bytes = s.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit()
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'));
        if starts {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

/// The files of `dir` (sorted), each with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no seed in {}", dir.display());
    out
}

/// Runs `downbeat run ARGS --device offline --seconds 0.2` in `dir` and checks the promise;
/// `what` says which input, for the message of a broken promise.
fn run(dir: &Path, args: &[&str], what: &str) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("run")
        .args(args)
        .args(["--device", "offline", "--seconds", "0.2"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the downbeat binary runs");
    // stderr is read on a thread of its own, so a chatty child never blocks on a full pipe.
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut pipe, &mut s);
        s
    });
    let began = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if began.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: no exit after {TIMEOUT:?} (killed)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stderr = reader.join().unwrap();
    let code = status.code();
    assert!(
        matches!(code, Some(0..=2)),
        "{what}: exit {status} (expected 0, 1 or 2)\n{stderr}"
    );
    assert!(
        !stderr.contains("panicked"),
        "{what}: panicked ({status})\n{stderr}"
    );
    if code != Some(0) {
        assert!(
            stderr.contains("error: ") && stderr.trim().len() > "error: ".len(),
            "{what}: exit {status} without a message on stderr"
        );
    }
}

/// Keeps `bytes` as `name` in `dir` and returns its path as text.
fn put(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Where the inputs of `kind` go: a broken promise names the folder, which keeps the input.
fn workdir(kind: &str) -> PathBuf {
    support::tmp("hostile-input", kind)
}

#[test]
fn damaged_projects_exit_cleanly_with_a_message() {
    let dir = workdir("projects");
    std::fs::create_dir_all(&dir).unwrap();
    let root = support::repo();
    let mut seeds = files(&root.join("examples/projects"));
    seeds.retain(|(p, _)| p.extension().is_some_and(|x| x == "toml"));
    seeds.extend(files(&root.join("crates/cli/tests/bad")));
    let mut rng = Rng(42);
    for case in 0..140 {
        let (seed, bytes) = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, bytes, true);
        let path = put(&dir, &format!("case-{case}.toml"), &input);
        run(
            &dir,
            &[&path],
            &format!("project case {case} (from {})", seed.display()),
        );
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn damaged_midi_files_exit_cleanly_with_a_message() {
    let dir = workdir("midi");
    std::fs::create_dir_all(&dir).unwrap();
    let root = support::repo();
    let project = put(
        &dir,
        "synth.toml",
        &std::fs::read(root.join("examples/projects/synth.toml")).unwrap(),
    );
    let mut seeds = files(&root.join("fuzz/seeds/midi_file"));
    seeds.retain(|(_, b)| b.starts_with(b"MThd"));
    let mut rng = Rng(7);
    for case in 0..100 {
        let (seed, bytes) = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, bytes, false);
        let midi = put(&dir, &format!("case-{case}.mid"), &input);
        run(
            &dir,
            &[&project, "--midi", &midi],
            &format!("MIDI case {case} (from {})", seed.display()),
        );
        std::fs::remove_file(&midi).unwrap();
    }
}

#[test]
fn damaged_player_files_exit_cleanly_with_a_message() {
    let dir = workdir("player");
    std::fs::create_dir_all(&dir).unwrap();
    let root = support::repo();
    let mut seeds = files(&root.join("fuzz/seeds/audio_file"));
    // The whole files: the damaged ones are made here.
    seeds.retain(|(p, _)| !p.file_name().unwrap().to_string_lossy().starts_with("bad-"));
    let mut rng = Rng(2024);
    for case in 0..120 {
        let (seed, bytes) = &seeds[rng.below(seeds.len())];
        let ext = seed.extension().unwrap().to_str().unwrap();
        let input = mutate(&mut rng, bytes, false);
        let file = format!("case-{case}.{ext}");
        put(&dir, &file, &input);
        let project = put(
            &dir,
            &format!("case-{case}.toml"),
            format!(
                "edges = [\"f -> out\"]\n[nodes.f]\ntype = \"player\"\npath = \"{file}\"\n\
                 loop = true\n[nodes.out]\ntype = \"output\"\n"
            )
            .as_bytes(),
        );
        run(
            &dir,
            &[&project],
            &format!("player case {case} (from {})", seed.display()),
        );
        std::fs::remove_file(dir.join(&file)).unwrap();
        std::fs::remove_file(&project).unwrap();
    }
}
