//! The project file reference ([`KEYS`]) against the parser it documents.
//!
//! * Complete: every table the parser reads refuses a key it does not take. The tables
//!   deserialized with `deny_unknown_fields` say which keys they take in that refusal
//!   (serde lists every field of the struct), and that list must be the table's keys in
//!   [`KEYS`]; the tables whose keys the file chooses (`[nodes.NAME]`, `[midi.cc]`) refuse
//!   a key their own way.
//! * True: each documented example, written into a project that has every table, is taken
//!   and builds, and changes what the project says; a required key left out is refused; a
//!   key left out gives what writing its documented default gives.

use downbeat::project::tempo::TransportSetup;
use downbeat::project::{KeyDefault, Project, BLOCK_SIZES, KEYS, SAMPLE_RATES, TABLES};
use downbeat_graph::time::Signature;

/// A project with every table, the base each key's example is written into.
const BASE: &str = r#"
edges = ["keys -> lowpass -> out"]

[nodes.keys]
type = "synth"

[nodes.lowpass]
type = "biquad"
mode = "lowpass"

[nodes.out]
type = "output"

[[automation]]
node = "lowpass"
param = "freq"
points = [[0.0, 500.0], [1.0, 2000.0, "exp"]]

[midi.cc]
74 = "keys.cutoff"

[tempo]
bpm = 100
changes = [{ beat = 12, bpm = 140, signature = "3/4" }]

[transport]
playing = true
loop = [0, 16]
"#;

/// The table `path` names (a [`TABLES`] entry) in `root`, a project like [`BASE`].
fn table<'a>(root: &'a mut toml::Table, path: &str) -> &'a mut toml::Table {
    let sub = |t: &'a mut toml::Table, key: &str| -> &'a mut toml::Value {
        t.get_mut(key)
            .unwrap_or_else(|| panic!("the base project has no `{key}`"))
    };
    let value = match path {
        "(top level)" => return root,
        "[nodes.NAME]" => sub(root, "nodes")
            .as_table_mut()
            .unwrap()
            .get_mut("lowpass")
            .unwrap(),
        "[[automation]]" => &mut sub(root, "automation").as_array_mut().unwrap()[0],
        "[midi]" => sub(root, "midi"),
        "[midi.cc]" => sub(root, "midi").get_mut("cc").unwrap(),
        "[tempo]" => sub(root, "tempo"),
        "[tempo] changes" => &mut sub(root, "tempo")
            .get_mut("changes")
            .unwrap()
            .as_array_mut()
            .unwrap()[0],
        "[transport]" => sub(root, "transport"),
        other => panic!("a table this test does not know: {other}; add it to `table`"),
    };
    value.as_table_mut().unwrap()
}

fn base() -> toml::Table {
    toml::from_str(BASE).unwrap()
}

/// `edit` applied to the table `path` of [`BASE`], as project text.
fn edited(path: &str, edit: impl FnOnce(&mut toml::Table)) -> String {
    let mut root = base();
    edit(table(&mut root, path));
    toml::to_string(&root).unwrap()
}

/// A key in capitals stands for keys the file chooses.
fn placeholder(key: &str) -> bool {
    key.chars().all(|c| c.is_ascii_uppercase() || c == '_')
}

/// What a project says, without where in its text it says it.
fn view(p: &Project) -> String {
    let automation: Vec<_> = p
        .automation
        .iter()
        .map(|a| {
            let points: Vec<_> = a.points.iter().map(|x| (x.at, x.value, x.shape)).collect();
            format!("{} {} {:?} {points:?}", a.node, a.param, a.unit)
        })
        .collect();
    let cc: Vec<_> = p
        .midi_cc
        .iter()
        .map(|m| (m.controller, &m.node, &m.param))
        .collect();
    format!(
        "{} {} {:?} {:?} {:?} {automation:?} {cc:?} {:?} {:?}",
        p.sample_rate, p.block_size, p.nodes, p.edges, p.edge_gains, p.tempo, p.transport
    )
}

fn parse(text: &str) -> Result<Project, downbeat::project::ProjectError> {
    Project::parse(text, "keys.toml")
}

/// The keys a serde refusal of `unknown` lists after "expected".
fn expected_keys(message: &str) -> Vec<String> {
    let (_, listed) = message
        .split_once("expected")
        .unwrap_or_else(|| panic!("no list of keys in: {message}"));
    listed
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn every_table_is_documented_and_every_key_in_a_documented_table() {
    for k in KEYS {
        assert!(
            TABLES.iter().any(|(t, _)| *t == k.table),
            "`{}` is in a table TABLES lacks: {}",
            k.key,
            k.table
        );
    }
    for (t, _) in TABLES {
        assert!(KEYS.iter().any(|k| k.table == *t), "{t} has no keys");
        // The base project has every table.
        table(&mut base(), t);
    }
    parse(BASE).unwrap().build().unwrap();
}

#[test]
fn every_table_refuses_an_unknown_key_and_lists_the_documented_ones() {
    for (path, _) in TABLES {
        let text = edited(path, |t| {
            t.insert("no_such_key".into(), toml::Value::String("x".into()));
        });
        let err = parse(&text).expect_err(&format!("{path}: an unknown key is refused"));
        let documented: Vec<_> = KEYS.iter().filter(|k| k.table == *path).collect();
        if documented.iter().any(|k| placeholder(k.key)) {
            // Keys the file chooses: the table checks them itself.
            assert!(
                err.message.contains("`no_such_key`"),
                "{path}: the refusal names the key: {}",
                err.message
            );
            continue;
        }
        let mut listed = expected_keys(&err.message);
        let mut keys: Vec<_> = documented.iter().map(|k| k.key.to_string()).collect();
        listed.sort();
        keys.sort();
        assert_eq!(
            listed, keys,
            "{path}: the keys the parser takes (left) and the keys KEYS documents (right)"
        );
    }
}

#[test]
fn every_documented_example_is_taken_and_changes_the_project() {
    for k in KEYS {
        let Some(example) = k.example else {
            // A key that is a table of its own: the base project has it, and its keys have
            // rows of their own.
            assert!(
                table(&mut base(), k.table).contains_key(k.key),
                "{}: the base project lacks it",
                k.key
            );
            assert!(
                TABLES.iter().any(|(t, _)| t.contains(k.key)),
                "{}: no table of its own",
                k.key
            );
            continue;
        };
        let line: toml::Table =
            toml::from_str(example).unwrap_or_else(|e| panic!("{}: `{example}`: {e}", k.key));
        assert_eq!(line.len(), 1, "{}: `{example}` sets one key", k.key);
        let (key, value) = line.into_iter().next().unwrap();
        if !placeholder(k.key) {
            assert_eq!(key, k.key, "the example `{example}` sets another key");
        }
        let with = edited(k.table, |t| {
            t.insert(key.clone(), value.clone());
        });
        let p = parse(&with).unwrap_or_else(|e| panic!("{} {}: `{example}`: {e}", k.table, k.key));
        p.build()
            .unwrap_or_else(|e| panic!("{} {}: `{example}`: {e}", k.table, k.key));
        if k.default != KeyDefault::Required {
            let without = parse(&edited(k.table, |t| {
                t.remove(&key);
            }))
            .unwrap();
            assert_ne!(
                view(&p),
                view(&without),
                "{} {}: `{example}` changes nothing",
                k.table,
                k.key
            );
        }
    }
}

#[test]
fn defaults_are_what_leaving_a_key_out_gives() {
    for k in KEYS {
        let without = edited(k.table, |t| {
            t.remove(k.key);
        });
        match k.default {
            KeyDefault::Required => {
                let refused = parse(&without).and_then(|p| p.build().map(|_| p));
                assert!(
                    refused.is_err(),
                    "{} {}: required, yet left out it is taken",
                    k.table,
                    k.key
                );
            }
            KeyDefault::Value(v) => {
                let value: toml::Table = toml::from_str(&format!("x = {v}"))
                    .unwrap_or_else(|e| panic!("{}: default `{v}`: {e}", k.key));
                let with = edited(k.table, |t| {
                    t.insert(k.key.into(), value["x"].clone());
                });
                let (with, without) = (parse(&with).unwrap(), parse(&without).unwrap());
                assert_eq!(
                    view(&with),
                    view(&without),
                    "{} {}: writing the default `{v}` differs from leaving the key out",
                    k.table,
                    k.key
                );
            }
            KeyDefault::Absent(_) if placeholder(k.key) => {}
            KeyDefault::Absent(_) => {
                parse(&without)
                    .and_then(|p| p.build())
                    .unwrap_or_else(|e| panic!("{} {}: left out: {e}", k.table, k.key));
            }
        }
    }

    // What the documented absences say, where the project shows it.
    let out = |path: &str, key: &str| {
        parse(&edited(path, |t| {
            t.remove(key);
        }))
        .unwrap()
    };
    let no_tempo = out("(top level)", "tempo");
    assert_eq!(no_tempo.tempo, None);
    let map = no_tempo.build().unwrap().transport().map().clone();
    assert_eq!(map.bpm_at(0.0), 120.0, "120 bpm");
    assert_eq!(
        map.signature_at(0.0),
        "4/4".parse::<Signature>().unwrap(),
        "in 4/4"
    );
    assert_eq!(
        out("(top level)", "transport").transport,
        TransportSetup {
            playing: true,
            looping: None
        },
        "playing from beat 0, no loop"
    );
    assert_eq!(out("[transport]", "loop").transport.looping, None);
    assert!(out("(top level)", "midi").midi_cc.is_empty());

    // The ranges the meanings give.
    let meaning = |key: &str| KEYS.iter().find(|k| k.key == key).unwrap().meaning;
    for (key, (min, max)) in [("sample_rate", SAMPLE_RATES), ("block_size", BLOCK_SIZES)] {
        assert!(
            meaning(key).contains(&format!("{min} to {max}")),
            "{key}: {}",
            meaning(key)
        );
    }
}
