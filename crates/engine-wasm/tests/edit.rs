//! Live edits natively (`Session::edit`, `db_edit`): a branch the edits leave alone renders
//! the same bits as without them, every refusal names its culprit and changes nothing, ids
//! stay put, and a batch is all or none.

use downbeat_engine_wasm::*;

/// A synth releasing through a filter and a spectral compressor (state, FFT frames, a latency
/// delay beside them), a string, into a mix.
const PROJECT: &str = "sample_rate = 48000\nblock_size = 128\n\
    edges = [\"keys -> lp -> comp -> mix\", \"pluck -> mix\", \"mix -> out\"]\n\
    [nodes.keys]\ntype = \"synth\"\nrelease = 1.5\n\
    [nodes.lp]\ntype = \"biquad\"\nfreq = 1500.0\n\
    [nodes.comp]\ntype = \"spectral_compressor\"\nfft_size = 512\nthreshold_db = -30.0\n\
    [nodes.pluck]\ntype = \"karplus\"\nnotes = [45, 52, 57]\ninterval = 0.25\nlength = 0.2\n\
    [nodes.mix]\ntype = \"mix\"\n\
    [nodes.out]\ntype = \"output\"\n";

const BLOCK: usize = 128;

/// A session playing a note from frame 0 that is released at frame 2000.
fn session() -> Session {
    let mut s = Session::load(PROJECT, "edit.toml").unwrap();
    let keys = s.instrument_id("keys").unwrap();
    s.event(Op::NoteOn, keys, Some(0), 60.0, 0.75, 0).unwrap();
    s.event(Op::NoteOff, keys, Some(2000), 60.0, 0.0, 0)
        .unwrap();
    s
}

/// Renders `blocks` blocks, channel 0 after channel 1 per block.
fn render(s: &mut Session, blocks: usize, out: &mut Vec<f32>) {
    for _ in 0..blocks {
        assert_eq!(s.render(BLOCK), Ok(BLOCK));
        out.extend_from_slice(s.output(0));
        out.extend_from_slice(s.output(1));
    }
}

fn first_difference(a: &[f32], b: &[f32]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x.to_bits() != y.to_bits())
}

#[test]
fn a_branch_the_edits_leave_alone_renders_the_same_bits() {
    let mut plain = session();
    let mut reference = Vec::new();
    render(&mut plain, 300, &mut reference);

    let mut s = session();
    let mut out = Vec::new();
    render(&mut s, 32, &mut out);
    s.edit(
        r#"{"add": {"side": {"type": "sine", "freq": 330, "amp": 0.2},
                    "sg": {"type": "gain", "gain": 0.5}},
            "connect": ["side -> sg -> mix"]}"#,
    )
    .unwrap();
    render(&mut s, 32, &mut out);
    // The side branch's edge moves: straight into the mix, with a level.
    s.edit(r#"{"disconnect": ["side -> sg"], "connect": ["side -> mix @ -6 dB"]}"#)
        .unwrap();
    render(&mut s, 32, &mut out);
    s.edit(r#"{"remove": ["side", "sg"]}"#).unwrap();
    render(&mut s, 204, &mut out);
    assert_eq!(s.edits_applied(), 3);
    assert_eq!(s.reclaim(), 1, "the last edit's old schedule, freed here");

    let (edited, removed) = (32 * 2 * BLOCK, 96 * 2 * BLOCK);
    assert_eq!(first_difference(&out[..edited], &reference[..edited]), None);
    assert!(
        first_difference(&out[edited..removed], &reference[edited..removed]).is_some(),
        "the side branch is heard while it is there"
    );
    assert_eq!(
        first_difference(&out[removed..], &reference[removed..]).map(|i| i + removed),
        None,
        "after the side branch is removed, the synth's release, the filter, the compressor \
         and the string go on as if there had been no edit"
    );
    assert!(out[removed..].iter().any(|&x| x != 0.0), "and they sound");
}

/// Renders blocks of a fresh session around `edit`, which must be refused with `code` and a
/// message starting with `message`, then around an empty edit (which commits whatever the
/// refused one might have left pending), and checks them against a session never edited.
fn refused(edit: &str, code: Code, message: &str) {
    let mut s = session();
    let mut out = Vec::new();
    render(&mut s, 4, &mut out);
    let table = s.table_json().to_string();
    let e = s.edit(edit).unwrap_err();
    assert_eq!(e.code, code, "{edit}: {}", e.message);
    assert!(
        e.message.starts_with(message),
        "{edit}:\n  got      {}\n  expected {message}...",
        e.message
    );
    assert_eq!(s.table_json(), table, "{edit}: the table is as it was");
    render(&mut s, 20, &mut out);
    assert_eq!(s.edits_applied(), 0);
    s.edit("{}").unwrap();
    render(&mut s, 20, &mut out);
    assert_eq!(s.edits_applied(), 1);
    assert_eq!(s.table_json(), table, "{edit}: nothing was left pending");
    let mut plain = session();
    let mut reference = Vec::new();
    render(&mut plain, 44, &mut reference);
    assert_eq!(
        first_difference(&out, &reference),
        None,
        "{edit}: the output changed"
    );
}

#[test]
fn every_refusal_names_its_culprit_and_changes_nothing() {
    let r = Code::Refused;
    refused(
        r#"{"remove": ["pluk"]}"#,
        r,
        "remove `pluk`: the graph has no node `pluk` (did you mean `pluck`?)",
    );
    refused(
        r#"{"connect": ["pluck -> lpf"]}"#,
        r,
        "connect \"pluck -> lpf\": the graph has no node `lpf` (did you mean `lp`?)",
    );
    refused(
        r#"{"disconnect": ["pluck -> lp"]}"#,
        r,
        "disconnect \"pluck -> lp\": the graph has no edge `pluck -> lp`",
    );
    refused(
        r#"{"connect": ["mix -> lp"]}"#,
        r,
        "the edited graph does not compile: the graph has a cycle: ",
    );
    refused(
        r#"{"connect": ["pluck -> comp:sidechain"]}"#,
        r,
        "the edited graph does not compile: node `comp` has no input port `sidechain`",
    );
    refused(
        r#"{"add": {"mono": {"type": "sine", "channels": 1}}, "connect": ["mono -> mix"]}"#,
        r,
        "the edited graph does not compile: edge `mono` -> `mix`: `mono` has 1 output \
         channel(s) but `mix` has 2 input channel(s)",
    );
    refused(
        r#"{"add": {"lp": {"type": "gain"}}}"#,
        r,
        "add `lp`: the graph already has a node `lp`",
    );
    refused(
        r#"{"add": {"x": {"type": "sinus"}}}"#,
        r,
        "add `x`: unknown node type \"sinus\"; valid types are ",
    );
    refused(
        r#"{"add": {"x": {"type": "sine", "fre": 3}}}"#,
        r,
        "add `x`: unknown parameter `fre` for node `x` of type \"sine\"; `sine` takes ",
    );
    refused(
        r#"{"add": {"x": {"type": "sine", "freq": -5}}}"#,
        r,
        "add `x`: bad value for `freq` of node `x`: ",
    );
    refused(
        r#"{"add": {"x": {"type": "sine", "freq": null}}}"#,
        r,
        "add `x`: `freq` is null (NaN or Infinity become null in JSON), not a parameter value",
    );
    refused(
        r#"{"add": {"a:b": {"type": "sine"}}}"#,
        r,
        "add `a:b`: node name `a:b` holds `:` or `@`",
    );
    refused(
        r#"{"connect": ["pluck"]}"#,
        r,
        "connect \"pluck\": edge \"pluck\" names only one node",
    );
    refused(
        r#"{"disconnect": ["pluck -> mix @ -3 dB"]}"#,
        r,
        "disconnect \"pluck -> mix @ -3 dB\": an edge is removed by its ends",
    );
    refused(
        r#"{"connect": ["pluck -> mix"]}"#,
        r,
        "connect \"pluck -> mix\": the edge `pluck -> mix` is there already",
    );
    refused(
        r#"{"remove": ["out"]}"#,
        r,
        "remove `out`: `out` is the graph's output and cannot be removed",
    );
    refused(
        r#"{"add": {"mono": {"type": "output", "channels": 1}}, "output": "mono"}"#,
        r,
        "output `mono`: `mono` has 1 output channels; the running output has 2",
    );
    refused(
        r#"{"add": {"f": {"type": "player", "path": "a.wav"}}}"#,
        Code::Unsupported,
        "add `f`: node `f` is of type \"player\", which streams a file from disk",
    );
    refused(
        r#"{"conect": []}"#,
        Code::BadInput,
        "edit: unknown key `conect`",
    );
    refused(
        r#"{"remove": "pluck"}"#,
        Code::BadInput,
        "edit: `remove` must be a list",
    );
    refused(
        "[1]",
        Code::BadInput,
        "edit: invalid type: sequence, expected an object",
    );
    refused("{", Code::BadInput, "edit: EOF while parsing");
    // All or none: the node added and the edge connected before the refused step, or before
    // the cycle, are not there.
    refused(
        r#"{"add": {"x": {"type": "sine"}}, "connect": ["x -> mix", "x -> nope"]}"#,
        r,
        "connect \"x -> nope\": the graph has no node `nope`",
    );
    refused(
        r#"{"add": {"x": {"type": "sine"}}, "connect": ["x -> mix", "mix -> lp"]}"#,
        r,
        "the edited graph does not compile: the graph has a cycle",
    );
}

#[test]
fn ids_stay_put_across_edits() {
    let mut s = session();
    s.render(BLOCK).unwrap();
    let freq = s.param_id("lp", "freq").unwrap();
    let decay = s.param_id("pluck", "decay").unwrap();
    let before = s.param_id("mix", "gain_db").unwrap();
    s.edit(r#"{"add": {"hp": {"type": "biquad", "mode": "highpass"}}, "disconnect": ["comp -> mix"], "connect": ["comp -> hp -> mix"], "remove": ["pluck"]}"#)
        .unwrap();
    // Kept parameters keep their ids; added ones come after every old one.
    assert_eq!(s.param_id("lp", "freq"), Some(freq));
    assert_eq!(s.param_id("mix", "gain_db"), Some(before));
    let hp = s.param_id("hp", "freq").unwrap();
    assert!(hp > before && hp > decay);
    assert_eq!(s.param_id("pluck", "decay"), None);
    let table: serde_json::Value = serde_json::from_str(s.table_json()).unwrap();
    let ids: Vec<u64> = table["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_u64().unwrap())
        .collect();
    assert!(
        !ids.contains(&u64::from(decay)),
        "the removed node's ids are left out"
    );
    assert!(ids.contains(&u64::from(hp)));
    // The added node is addressed at once; the removed one's id is refused.
    s.event(Op::Step, hp, None, 200.0, 0.0, 0).unwrap();
    let e = s.event(Op::Step, decay, None, 0.9, 0.0, 0).unwrap_err();
    assert_eq!(e.code, Code::UnknownId);
    assert!(e.message.contains("an edit removed it"), "{}", e.message);
    s.render(BLOCK).unwrap();
    assert_eq!(s.value(hp), Ok(200.0));
    assert!(s.value(decay).is_err());
}

#[test]
fn edits_wait_for_a_render_eight_at_most() {
    let mut s = session();
    for k in 0..8 {
        s.edit(&format!(
            r#"{{"add": {{"x{k}": {{"type": "sine"}}}}, "connect": ["x{k} -> mix"]}}"#
        ))
        .unwrap();
    }
    let e = s
        .edit(r#"{"add": {"y": {"type": "sine"}}, "connect": ["y -> mix"]}"#)
        .unwrap_err();
    assert_eq!(e.code, Code::Busy, "{}", e.message);
    s.render(BLOCK).unwrap();
    assert_eq!(s.edits_applied(), 8);
    // The busy batch was dropped, not kept: `y` is free.
    s.edit(r#"{"add": {"y": {"type": "sine"}}, "connect": ["y -> mix"]}"#)
        .unwrap();
}

#[test]
fn db_edit_returns_the_code_and_keeps_the_message() {
    let text = PROJECT.as_bytes();
    let name = b"edit.toml";
    // SAFETY: every slice is valid for its length.
    unsafe {
        assert_eq!(
            db_load(
                text.as_ptr(),
                text.len() as u32,
                name.as_ptr(),
                name.len() as u32
            ),
            0
        );
        let bad = br#"{"remove": ["nope"]}"#;
        assert_eq!(
            db_edit(bad.as_ptr(), bad.len() as u32),
            Code::Refused as i32
        );
        assert!(last_error().starts_with("remove `nope`: the graph has no node `nope`"));
        let good = br#"{"add": {"n": {"type": "noise"}}, "connect": ["n -> mix"]}"#;
        assert_eq!(db_edit(good.as_ptr(), good.len() as u32), 0);
    }
    assert_eq!(db_render(BLOCK as u32), BLOCK as i32);
    assert_eq!(db_reclaim(), 1);
    assert_eq!(db_reclaim(), 0);
}

#[test]
fn a_node_removed_and_added_again_has_its_old_ids_and_its_new_values() {
    let mut s = session();
    s.render(BLOCK).unwrap();
    let freq = s.param_id("lp", "freq").unwrap();
    s.edit(r#"{"remove": ["lp"], "connect": ["keys -> comp"]}"#)
        .unwrap();
    assert_eq!(s.param_id("lp", "freq"), None);
    s.edit(
        r#"{"add": {"lp": {"type": "biquad", "freq": 600}},
            "disconnect": ["keys -> comp"], "connect": ["keys -> lp -> comp"]}"#,
    )
    .unwrap();
    assert_eq!(
        s.param_id("lp", "freq"),
        Some(freq),
        "the same node: the same id"
    );
    let table: serde_json::Value = serde_json::from_str(s.table_json()).unwrap();
    let lp = table["params"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["node"] == "lp" && p["name"] == "freq")
        .unwrap();
    assert_eq!(lp["initial"], 600.0);
    s.render(BLOCK).unwrap();
    assert_eq!(s.value(freq), Ok(600.0));
}
