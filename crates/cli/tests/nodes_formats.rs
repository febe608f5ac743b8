//! `downbeat nodes --json` and `downbeat nodes --markdown`: the same node types, every
//! parameter with its unit.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs `downbeat nodes` with `args` and returns what it printed.
fn nodes(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_downbeat"))
        .arg("nodes")
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .output()
        .expect("the downbeat binary runs");
    assert!(
        out.status.success(),
        "downbeat nodes {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the reference is UTF-8")
}

/// The types `downbeat nodes --json` lists.
fn json_types() -> Vec<Value> {
    let text = nodes(&["--json"]);
    let json: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("`downbeat nodes --json` is not JSON ({e}):\n{text}"));
    json.as_array()
        .expect("`downbeat nodes --json` is an array of types")
        .clone()
}

/// The parameter `param` of type `ty` in the JSON listing.
fn param<'a>(types: &'a [Value], ty: &str, param: &str) -> &'a Value {
    let t = types
        .iter()
        .find(|t| t["name"] == ty)
        .unwrap_or_else(|| panic!("`{ty}` is not listed"));
    t["params"]
        .as_array()
        .unwrap_or_else(|| panic!("`{ty}` has no parameter list"))
        .iter()
        .find(|p| p["name"] == param)
        .unwrap_or_else(|| panic!("`{ty}` has no parameter `{param}`"))
}

#[test]
fn json_lists_the_types_with_their_parameters_and_units() {
    let types = json_types();
    // Built-in types and the ones the binary registers at start.
    for (ty, name, unit, live) in [
        ("sine", "freq", "Hz", true),
        ("sine", "amp", "", true),
        ("sine", "phase", "cycles", false),
        ("synth", "attack", "s", true),
        ("synth", "cutoff", "Hz", true),
        ("synth", "bend_range", "st", true),
        ("synth", "voices", "", false),
        ("player", "path", "", false),
        ("player", "seek", "s", true),
        ("player", "read_ahead", "s", false),
        ("sampler", "root", "note", false),
        ("sampler", "release", "s", false),
        ("sampler", "samples", "", false),
    ] {
        let p = param(&types, ty, name);
        assert_eq!(p["unit"], unit, "{ty}.{name}: {p}");
        assert_eq!(p["live"], live, "{ty}.{name}: {p}");
        assert!(
            p["doc"].as_str().is_some_and(|d| !d.is_empty()),
            "{ty}.{name}: {p}"
        );
    }
    let freq = param(&types, "sine", "freq");
    assert_eq!(freq["kind"], "float");
    assert_eq!(freq["min"], 0.0);
    assert_eq!(freq["max"], 96000.0);
    assert_eq!(freq["default"], 440.0);
    assert_eq!(freq["options"], Value::Null);
    let wave = param(&types, "synth", "wave");
    assert_eq!(wave["kind"], "choice");
    assert_eq!(wave["default"], "saw");
    assert!(wave["options"]
        .as_array()
        .is_some_and(|o| o.iter().any(|w| w == "sine")));
    assert_eq!(param(&types, "player", "path")["kind"], "path");
    assert_eq!(param(&types, "sampler", "samples")["kind"], "path_map");
    // Every parameter has every field, and a unit that is a string.
    for t in &types {
        assert!(t["name"].is_string() && t["doc"].is_string(), "{t}");
        assert!(
            t["open_params"].is_string() || t["open_params"].is_null(),
            "{t}"
        );
        for p in t["params"].as_array().expect("a parameter list") {
            for key in [
                "name", "kind", "min", "max", "default", "options", "unit", "live", "doc",
            ] {
                assert!(p.get(key).is_some(), "{} lacks `{key}`: {p}", t["name"]);
            }
            assert!(p["unit"].is_string(), "{p}");
        }
    }
}

#[test]
fn markdown_lists_every_type_json_lists() {
    let markdown = nodes(&["--markdown"]);
    assert!(markdown.starts_with("# Node types\n"), "{markdown}");
    assert!(
        !markdown.contains("```"),
        "no code fences: the guide's pages are doctests"
    );
    let types = json_types();
    assert!(types.len() >= 4, "{types:?}");
    for t in &types {
        let name = t["name"].as_str().expect("a type name");
        assert!(
            markdown.contains(&format!("\n## `{name}`\n")),
            "`{name}` is missing from the Markdown reference"
        );
        for p in t["params"].as_array().expect("a parameter list") {
            let row = format!("| `{}` |", p["name"].as_str().expect("a parameter name"));
            assert!(
                markdown.contains(&row),
                "`{name}`'s parameter {} is missing from the Markdown reference",
                p["name"]
            );
        }
    }
}
