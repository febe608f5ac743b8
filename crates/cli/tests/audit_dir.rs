//! `downbeat audit DIR`: a row per plugin of every CLAP file (and LV2 bundle) under a folder,
//! each audited in a probe of its own, so that the test plugins that crash do not stop the
//! others; `--json` is one array with an object per plugin; and every CLAP plugin Debian's
//! `zam-plugins` installs in `/usr/lib/clap` gets its row.

#![cfg(feature = "clap")]

#[path = "../../plugin/tests/clap_support/mod.rs"]
mod clap_support;
#[path = "../../plugin/tests/vst3_support/mod.rs"]
mod vst3_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clap_support::{
    test_plugins, ALLOC_ID, CLICK_ID, DELAY_ID, GAIN_ID, HOST_PROBE_ID, RESHAPER_ID, SLEEPER_ID,
    TRANSPORT_ID,
};

const CRASH_CREATE: &str = "org.downbeat.test.crash.create";
const CRASH_ACTIVATE: &str = "org.downbeat.test.crash.activate";
const CRASH_PROCESS: &str = "org.downbeat.test.crash.process";
const CRASH_DEACTIVATE: &str = "org.downbeat.test.crash.deactivate";

fn audit(target: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("audit")
        .arg(target)
        .args(extra)
        .output()
        .expect("downbeat runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A folder holding the test plugins (`plugins/test.clap`, one level down), a file named
/// like a plugin that is not one (`broken.clap`), and a file that is not named like one.
fn folder(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("downbeat-audit-dir-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    std::fs::copy(test_plugins(), dir.join("plugins/test.clap")).unwrap();
    std::fs::write(dir.join("broken.clap"), "not a shared library").unwrap();
    std::fs::write(dir.join("README.txt"), "not a plugin either").unwrap();
    dir
}

/// The table's data rows (after the header, before the reasons), split into cells.
fn rows(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("refused: "))
        .map(|l| {
            // The signal cell holds spaces (`SIGSEGV (signal 11)`): glue it back.
            let l = l.replace(" (signal ", "(signal_");
            l.split_whitespace().map(str::to_string).collect()
        })
        .collect()
}

#[test]
fn a_folder_gets_a_row_per_plugin_and_a_crash_does_not_stop_the_rest() {
    let dir = folder("table");
    let out = audit(&dir, &["--blocks", "20"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    let rows = rows(&stdout);
    let broken = dir.join("broken.clap").display().to_string();
    let test = dir.join("plugins/test.clap").display().to_string();
    // path, id, format, result, phase, signal, violations
    let want: [(&str, &str, &str, &str, &str); 13] = [
        (&broken, "-", "refused", "-", "-"),
        (&test, GAIN_ID, "clean", "-", "-"),
        (&test, DELAY_ID, "clean", "-", "-"),
        (&test, ALLOC_ID, "violations", "-", "-"),
        (&test, CLICK_ID, "clean", "-", "-"),
        (&test, HOST_PROBE_ID, "clean", "-", "-"),
        (
            &test,
            CRASH_CREATE,
            "crashed",
            "create",
            "SIGSEGV(signal_11)",
        ),
        (
            &test,
            CRASH_ACTIVATE,
            "crashed",
            "activate",
            "SIGSEGV(signal_11)",
        ),
        (
            &test,
            CRASH_PROCESS,
            "crashed",
            "process",
            "SIGSEGV(signal_11)",
        ),
        (
            &test,
            CRASH_DEACTIVATE,
            "crashed",
            "deactivate",
            "SIGSEGV(signal_11)",
        ),
        (&test, TRANSPORT_ID, "clean", "-", "-"),
        (&test, SLEEPER_ID, "clean", "-", "-"),
        (&test, RESHAPER_ID, "clean", "-", "-"),
    ];
    assert_eq!(rows.len(), want.len(), "{stdout}");
    for (row, (path, id, result, phase, signal)) in rows.iter().zip(want) {
        assert_eq!(
            row[..6],
            [path, id, "clap", result, phase, signal],
            "{stdout}"
        );
    }
    // The allocating plugin's violations are counted; the clean ones have none.
    assert_ne!(rows[3][6], "0", "{stdout}");
    assert_eq!(rows[1][6], "0", "{stdout}");
    // Why the broken file was refused, and the summary.
    assert!(
        stdout.contains(&format!("refused: {broken}: ")) && stdout.contains("cannot be loaded"),
        "{stdout}"
    );
    assert!(
        stderr.contains("13 plugins, 7 clean, 1 with violations, 4 crashed, 1 refused"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn json_is_one_array_with_an_object_per_plugin() {
    let dir = folder("json");
    let out = audit(&dir, &["--blocks", "20", "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let rows = v.as_array().expect("an array");
    assert_eq!(rows.len(), 13, "{v:#}");
    for row in rows {
        for field in [
            "path",
            "id",
            "format",
            "result",
            "phase",
            "signal",
            "violations",
        ] {
            assert!(row.get(field).is_some(), "no {field} in {row}");
        }
        assert_eq!(row["format"], "clap");
    }
    let by_id = |id: &str| {
        rows.iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no row for {id}: {v:#}"))
    };
    let gain = by_id(GAIN_ID);
    assert_eq!(gain["result"], "clean");
    assert_eq!(gain["violations"], 0);
    assert!(gain["phase"].is_null() && gain["signal"].is_null());
    let alloc = by_id(ALLOC_ID);
    assert_eq!(alloc["result"], "violations");
    assert!(alloc["violations"].as_u64().unwrap() >= 20, "{alloc}");
    for (id, phase) in [
        (CRASH_CREATE, "create"),
        (CRASH_ACTIVATE, "activate"),
        (CRASH_PROCESS, "process"),
        (CRASH_DEACTIVATE, "deactivate"),
    ] {
        let row = by_id(id);
        assert_eq!(row["result"], "crashed", "{row}");
        assert_eq!(row["phase"], phase, "{row}");
        assert_eq!(row["signal"], 11, "{row}");
    }
    // Crashed in its teardown, after its process calls were audited: they were clean.
    assert_eq!(by_id(CRASH_DEACTIVATE)["violations"], 0);
    let broken = rows
        .iter()
        .find(|r| r["id"].is_null())
        .expect("a row for broken.clap");
    assert_eq!(broken["result"], "refused");
    assert!(broken["path"].as_str().unwrap().ends_with("broken.clap"));
    assert!(broken["reason"]
        .as_str()
        .unwrap()
        .contains("cannot be loaded"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Links to a CLAP file and to a VST3 bundle are audited, under the link's own path; a link
/// to a folder of plugins is passed over, since following such links could walk a loop
/// forever.
#[cfg(feature = "vst3")]
#[test]
fn links_to_files_and_bundles_are_followed_and_links_to_folders_are_not() {
    let dir = std::env::temp_dir().join(format!("downbeat-audit-links-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // The folder linked to lies outside the audited one: reached through the link or not
    // at all.
    let elsewhere = folder("linked-to");
    std::fs::create_dir_all(&dir).unwrap();
    let target = vst3_support::test_bundle();
    // A VST3 bundle's library is named after the bundle, so its link keeps the name.
    let (file, bundle, linked_folder) = (
        dir.join("linked.clap"),
        dir.join(target.file_name().unwrap()),
        dir.join("folder"),
    );
    std::os::unix::fs::symlink(test_plugins(), &file).unwrap();
    std::os::unix::fs::symlink(&target, &bundle).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &linked_folder).unwrap();
    let out = audit(&dir, &["--blocks", "20", "--json"]);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&elsewhere).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&out.stderr)));
    let rows = v.as_array().unwrap();
    let under = |path: &Path| {
        rows.iter()
            .filter(|r| Path::new(r["path"].as_str().unwrap()).starts_with(path))
            .collect::<Vec<_>>()
    };
    assert!(
        under(&linked_folder).is_empty(),
        "the link to a folder was followed: {v:#}"
    );
    let (clap, vst3) = (under(&file), under(&bundle));
    assert_eq!(rows.len(), clap.len() + vst3.len(), "{v:#}");
    let row = |rows: &[&serde_json::Value], id: &str| {
        (*rows
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no row for {id}: {v:#}")))
        .clone()
    };
    let gain = row(&clap, GAIN_ID);
    assert_eq!(
        (&gain["format"], &gain["result"]),
        (&"clap".into(), &"clean".into())
    );
    let probe = row(&vst3, vst3_support::PROBE);
    assert_eq!(
        (&probe["format"], &probe["result"]),
        (&"vst3".into(), &"clean".into())
    );
}

#[test]
fn a_folder_without_plugins_is_bad_input() {
    let dir = std::env::temp_dir().join(format!("downbeat-audit-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "nothing here").unwrap();
    let out = audit(&dir, &[]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(
        err.contains("no CLAP file (*.clap), VST3 bundle (*.vst3) or LV2 bundle (*.lv2)"),
        "{err}"
    );
}

/// Without the `lv2` feature a bundle (any folder named `*.lv2`) is a row, refused with the
/// reason; with it, the bundle's plugins are audited through lilv (`crates/plugin/ci.sh`
/// installs Debian's `zam-plugins`, whose ZamComp bundle this links to).
#[test]
fn an_lv2_bundle_is_a_row() {
    let dir = std::env::temp_dir().join(format!("downbeat-audit-lv2-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    if cfg!(feature = "lv2") {
        let bundle = Path::new("/usr/lib/lv2/ZamComp.lv2");
        assert!(
            bundle.is_dir(),
            "{} is missing: install Debian's zam-plugins",
            bundle.display()
        );
        std::os::unix::fs::symlink(bundle, dir.join("ZamComp.lv2")).unwrap();
    } else {
        std::fs::create_dir_all(dir.join("Some.lv2")).unwrap();
    }
    let out = audit(&dir, &["--blocks", "20", "--json"]);
    std::fs::remove_dir_all(&dir).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v:#}");
    assert_eq!(rows[0]["format"], "lv2");
    if cfg!(feature = "lv2") {
        assert_eq!(rows[0]["id"], "urn:zamaudio:ZamComp", "{v:#}");
        assert_eq!(rows[0]["result"], "clean", "{v:#}");
        assert_eq!(out.status.code(), Some(0));
    } else {
        assert_eq!(rows[0]["result"], "refused");
        assert!(rows[0]["id"].is_null());
        let reason = rows[0]["reason"].as_str().unwrap();
        assert!(reason.contains("without the `lv2` feature"), "{reason}");
        assert_eq!(out.status.code(), Some(2));
    }
}

/// Every CLAP plugin Debian's `zam-plugins` installs gets a row with a result (the host
/// side's fixes decide which results; this test only asks that the audit gets through).
/// Fails when zam-plugins is missing; `./test` installs it.
#[test]
fn usr_lib_clap_finishes_with_a_row_per_plugin() {
    let dir = Path::new("/usr/lib/clap");
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}: install Debian's zam-plugins", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "clap"))
        .collect();
    assert!(
        files.iter().any(|f| f.ends_with("ZamComp.clap")),
        "no ZamComp.clap in {}: install Debian's zam-plugins",
        dir.display()
    );
    let out = audit(dir, &["--blocks", "20", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&out.stderr)));
    let rows = v.as_array().unwrap();
    // Every zam file holds one plugin.
    assert_eq!(rows.len(), files.len(), "{v:#}");
    for file in &files {
        let row = rows
            .iter()
            .find(|r| r["path"] == file.display().to_string())
            .unwrap_or_else(|| panic!("no row for {}: {v:#}", file.display()));
        assert!(row["id"].is_string(), "{row}");
        assert_ne!(row["result"], "refused", "{row}");
    }
    let code = out.status.code();
    assert!(matches!(code, Some(0 | 2 | 3)), "exit {code:?}");
}

/// Debian's zam-plugins VST3 bundles: a row each, named by its class, in the `vst3` format,
/// none refused, and the verdicts the CLAP builds of the same plugins get (ZamHeadX2 and
/// ZamVerb allocate in their first callbacks, in either format; see docs/AUDIT.md).
#[test]
fn usr_lib_vst3_gets_a_row_per_bundle_with_the_clap_builds_verdicts() {
    let dir = Path::new("/usr/lib/vst3");
    let bundles: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}: install Debian's zam-plugins", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "vst3"))
        .collect();
    assert_eq!(
        bundles.len(),
        17,
        "zam-plugins' 17 VST3 bundles: {bundles:?}"
    );
    let out = audit(dir, &["--blocks", "20", "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&out.stderr)));
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), bundles.len(), "{v:#}");
    for bundle in &bundles {
        let name = bundle.file_stem().unwrap().to_string_lossy();
        let row = rows
            .iter()
            .find(|r| r["path"] == bundle.display().to_string())
            .unwrap_or_else(|| panic!("no row for {}: {v:#}", bundle.display()));
        assert_eq!(
            (row["format"].as_str(), row["id"].as_str()),
            (Some("vst3"), Some(&*name))
        );
        let want = if ["ZamHeadX2", "ZamVerb"].contains(&&*name) {
            "violations"
        } else {
            "clean"
        };
        assert_eq!(row["result"], want, "{row}");
    }
}
