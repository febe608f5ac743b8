//! `examples/samples/make.py` writes the same bytes on every machine (the guide, "A sampler drum
//! kit"): its outputs are pinned here by SHA-256, and the one thing that could make another
//! machine differ, the C library's `sin` and `exp` (Python's `math` calls them), is shown
//! unable to: no sample sits near enough to a 16-bit rounding edge for a last-bit
//! difference in those functions to move it across.

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;

/// The script's outputs and their SHA-256, as `sha256sum` prints them.
const PINNED: [(&str, &str); 5] = [
    (
        "samples/kick.wav",
        "c6ba92f6d52a9263f47455feedf034cb14d050a9324bcecce7d64a109e3ca9fe",
    ),
    (
        "samples/snare.wav",
        "fe1855ccc4ef2188f1761d148639b3f2b6e2a103639ae2a00dde957769a49650",
    ),
    (
        "samples/hat.wav",
        "f56cdb688fffad1a16b8252177ccf52dd5de0228301922b1752f811d2eccee3a",
    ),
    (
        "samples/open-hat.wav",
        "508d56969d66059e51cc7ff6e1d70f5247b3d5fcb474278f6cbcaf945b2d08d6",
    ),
    (
        "projects/drums.mid",
        "7f9ca76a6e7b10382d073a1cffb5b4f543b8751b3f15ea9ec0465b7cb29221e7",
    ),
];

/// A copy of `make.py` in a folder of this test's own, laid out as in `examples/` (the script
/// writes next to itself and into `../projects/`): the examples' own files are read by other
/// tests running beside this one. `name` keeps this binary's tests apart.
fn scratch_copy(name: &str) -> PathBuf {
    let root = support::tmp("made-files", name);
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("samples")).unwrap();
    std::fs::create_dir_all(root.join("projects")).unwrap();
    std::fs::copy(
        support::repo().join("examples/samples/make.py"),
        root.join("samples/make.py"),
    )
    .unwrap();
    root
}

fn sha256(path: &Path) -> String {
    // coreutils' sha256sum: the workspace has no hashing crate, and the test needs none.
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum runs");
    assert!(
        out.status.success(),
        "sha256sum {}: {out:?}",
        path.display()
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace().next().unwrap().to_string()
}

#[test]
fn make_py_writes_the_pinned_bytes() {
    let root = scratch_copy("pinned");
    let status = Command::new("python3")
        .arg(root.join("samples/make.py"))
        .status()
        .expect("python3 runs");
    assert!(status.success(), "make.py failed");
    let got: Vec<(&str, String)> = PINNED
        .iter()
        .map(|(file, _)| (*file, sha256(&root.join(file))))
        .collect();
    let want: Vec<(&str, String)> = PINNED.iter().map(|(f, h)| (*f, h.to_string())).collect();
    assert_eq!(got, want, "make.py's outputs changed");
    // The MIDI file is committed: the script still writes exactly it.
    assert_eq!(
        std::fs::read(root.join("projects/drums.mid")).unwrap(),
        std::fs::read(support::repo().join("examples/projects/drums.mid")).unwrap(),
        "make.py no longer writes the committed examples/projects/drums.mid"
    );
    // The guide's size (docs/guide/src/tasks/files.md): 109 KB of WAVs.
    let wav_bytes: u64 = PINNED[..4]
        .iter()
        .map(|(f, _)| std::fs::metadata(root.join(f)).unwrap().len())
        .sum();
    assert_eq!((wav_bytes + 500) / 1000, 109, "{wav_bytes} bytes of WAVs");
    std::fs::remove_dir_all(&root).unwrap();
}

/// How close the script's samples come to a 16-bit rounding edge, in steps of the last bit
/// (0.5 would be halfway between two edges): the script's own functions, called as
/// `write_wav` scales and rounds their results.
const MARGIN: &str = r#"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("make", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
kits = [m.kick(), m.snare(), m.hat(0.08, 0.02, 11), m.hat(0.4, 0.12, 13)]
worst = 1.0
for s in kits:
    s = m.fade_out(s)
    scale = 0.9 / max(abs(x) for x in s)
    worst = min(worst, min(abs((x * scale * 32767) % 1.0 - 0.5) for x in s))
print(worst)
"#;

/// A C library whose `sin` or `exp` differs from this machine's in the last bits (a few ULPs,
/// about 1e-16 relative) moves a sample by about 1e-9 of a 16-bit step at most: the kick's
/// phase, a sum of 19,845 increments, may round differently a few times (~1e-14 rad each),
/// and the normalisation divides by a peak off by ~1e-16. The nearest sample to a rounding
/// edge is more than 1e-7 of a step from it (4.4e-6 when this test was written), so no such
/// difference can change a byte; the rest is IEEE-754 arithmetic, the same everywhere.
#[test]
fn make_py_keeps_every_sample_away_from_a_rounding_edge() {
    let root = scratch_copy("margin");
    let out = Command::new("python3")
        .args(["-c", MARGIN])
        .arg(root.join("samples/make.py"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let margin: f64 = String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        margin > 1e-7,
        "a sample lies {margin} of a 16-bit step from a rounding edge: another C library's \
         sin/exp could round it the other way"
    );
    std::fs::remove_dir_all(&root).unwrap();
}
