//! `Editor`: live edits keep every node they do not touch, state and all.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use downbeat_graph::{
    AudioMut, AudioRef, Change, CompileConfig, EditError, Editor, Event, Graph, GraphError, Node,
    NoteEvent, ProcessContext, Schedule,
};
use downbeat_nodes::{
    CompressorSettings, Gain, Karplus, KarplusSettings, Mix, MixSettings, Noise, NoiseSettings,
    Output, Sine, SineSettings, SpectralCompressor, Synth, SynthSettings,
};

const SR: u32 = 48_000;
const BLOCK: usize = 64;
const CFG: CompileConfig = CompileConfig {
    sample_rate: SR,
    max_block: BLOCK,
};

/// Audible: a synth whose note is released before the edit (its release rings across
/// it), a plucked string, a compressor with latency (so compile delays the other paths
/// into `mix`), all into `mix`. Off the audible path: a sine through `side` and a
/// gain of 0 into `mix`, where the edits happen (a product with 0 adds nothing to a sum,
/// so the output is what the audible branch makes).
fn graph() -> Graph {
    let mut g = Graph::new();
    g.add(
        "synth",
        Synth::new(1, SR, &SynthSettings::default()).unwrap(),
    );
    g.add(
        "string",
        Karplus::new(1, SR, &KarplusSettings::default()).unwrap(),
    );
    g.add("noise", Noise::new(1, &NoiseSettings { amp: 0.3, seed: 7 }));
    g.add(
        "comp",
        SpectralCompressor::new(1, SR, &CompressorSettings::default()).unwrap(),
    );
    g.add(
        "tone",
        Sine::new(
            1,
            SR,
            &SineSettings {
                freq: 330.0,
                amp: 0.5,
                ..SineSettings::default()
            },
        ),
    );
    g.add("side", Gain::new(1, 0.5));
    g.add("mute", Gain::new(1, 0.0));
    g.add(
        "mix",
        Mix::new(
            1,
            &MixSettings {
                gain_db: 0.0,
                ..MixSettings::default()
            },
        ),
    );
    let out = g.add("out", Output::new(1));
    for (f, t) in [
        ("synth", "mix"),
        ("string", "mix"),
        ("noise", "comp"),
        ("comp", "mix"),
        ("tone", "side"),
        ("side", "mute"),
        ("mute", "mix"),
        ("mix", "out"),
    ] {
        g.connect(f, t);
    }
    g.set_output(out);
    g
}

fn play(schedule: &mut Schedule, frame: u64, event: NoteEvent) {
    let key = schedule.param_table().node_key("synth").unwrap();
    schedule
        .push_event(Event::note(Some(frame), key, event))
        .unwrap();
}

fn block_bits(s: &Schedule) -> Vec<u32> {
    s.output().channel(0).iter().map(|x| x.to_bits()).collect()
}

/// Renders `blocks` blocks, calling `edit` before block `at` with the editor; whatever
/// schedule it returns takes over at that block boundary, as the engine does it.
fn render(
    blocks: usize,
    at: usize,
    edit: impl FnOnce(&mut Editor) -> Option<Schedule>,
) -> (Vec<u32>, usize) {
    let (out, kept, _) = render_from(blocks, at, queue_notes, edit);
    (out, kept)
}

/// The synth's note on and off, through the live queue.
fn queue_notes(running: &mut Schedule) {
    play(
        running,
        100,
        NoteEvent::On {
            channel: 0,
            note: 57.0,
            velocity: 0.9,
        },
    );
    play(
        running,
        4000,
        NoteEvent::Off {
            channel: 0,
            note: 57.0,
        },
    );
}

/// As `render`, with `preload` putting the events on the first schedule.
fn render_from(
    blocks: usize,
    at: usize,
    preload: impl FnOnce(&mut Schedule),
    edit: impl FnOnce(&mut Editor) -> Option<Schedule>,
) -> (Vec<u32>, usize, u64) {
    let (mut editor, mut running) = Editor::new(graph(), CFG).unwrap();
    preload(&mut running);
    let mut out = Vec::new();
    let mut edit = Some(edit);
    let mut kept = 0;
    for b in 0..blocks {
        if b == at {
            if let Some(mut next) = (edit.take().unwrap())(&mut editor) {
                kept = next.kept_nodes();
                next.take_over(&mut running);
                std::mem::swap(&mut next, &mut running);
            }
        }
        running.process(BLOCK);
        out.extend(block_bits(&running));
    }
    (out, kept, running.event_stats().stale)
}

/// An edit in the middle of a render (a node added on the side branch, another removed,
/// an edge moved) leaves the audible branch bit for bit as it is without the edit: the
/// synth's release, the string's delay line, the compressor's FFT frames and the
/// latency delays on the paths beside it all go on across the edit.
#[test]
fn a_render_with_edits_equals_the_render_without_on_every_untouched_branch() {
    let blocks = 200; // 0.27 s; the edit after the note off, in the release
    let (plain, _) = render(blocks, 70, |_| None);
    let (edited, kept) = render(blocks, 70, |e| {
        e.add(
            "tone2",
            Sine::new(
                1,
                SR,
                &SineSettings {
                    freq: 440.0,
                    amp: 0.5,
                    ..SineSettings::default()
                },
            ),
        )
        .unwrap();
        e.remove("side").unwrap();
        e.add("side2", Gain::new(1, 0.25)).unwrap();
        e.connect("tone", "side2").unwrap();
        e.connect("tone2", "side2").unwrap();
        e.connect("side2", "mute").unwrap();
        Some(e.commit().unwrap())
    });
    // Every node but `side` is kept, and so is every latency delay into `mix`.
    assert!(kept >= 8, "{kept} nodes kept");
    assert!(
        plain.iter().any(|&x| f32::from_bits(x) != 0.0),
        "the audible branch is silent"
    );
    let first = plain.iter().zip(&edited).position(|(a, b)| a != b);
    assert_eq!(first, None, "the outputs part at sample {first:?}");
}

/// The preloaded timeline (automation, a `--midi` file, a replay) goes on across an edit:
/// its notes and parameter steps after the edit reach the same nodes, bit for bit as
/// without the edit, and its events for a node the edit removed are counted as stale.
#[test]
fn the_preloaded_timeline_goes_on_across_an_edit() {
    let edit_block = 70;
    let after = (edit_block * BLOCK) as u64 + 500;
    let timeline = |later: bool| {
        move |s: &mut Schedule| {
            let table = s.param_table();
            let synth = table.node_key("synth").unwrap();
            let gain = table.resolve("mix", "gain_db").unwrap();
            let side = table.resolve("side", "gain").unwrap();
            let note = |frame, event| Event::note(Some(frame), synth, event);
            let mut events = vec![
                note(
                    100,
                    NoteEvent::On {
                        channel: 0,
                        note: 57.0,
                        velocity: 0.9,
                    },
                ),
                note(
                    4000,
                    NoteEvent::Off {
                        channel: 0,
                        note: 57.0,
                    },
                ),
            ];
            if !later {
                s.set_timeline(events).unwrap();
                return;
            }
            events.extend([
                note(
                    after,
                    NoteEvent::On {
                        channel: 0,
                        note: 64.0,
                        velocity: 0.7,
                    },
                ),
                Event::param(Some(after + 3000), gain, Change::Step(-9.0)),
                Event::param(Some(after + 4000), side, Change::Step(0.1)),
            ]);
            s.set_timeline(events).unwrap();
        }
    };
    let blocks = 200;
    let (plain, _, none_stale) = render_from(blocks, edit_block, timeline(true), |_| None);
    let (earlier, _, _) = render_from(blocks, edit_block, timeline(false), |_| None);
    let (edited, _, stale) = render_from(blocks, edit_block, timeline(true), |e| {
        e.remove("side").unwrap();
        e.connect("tone", "mute").unwrap();
        Some(e.commit().unwrap())
    });
    // What the events after the edit change: the note at `after` on, heard after the
    // compressor's latency (the paths beside it are delayed to match), before the step.
    let latency = CompressorSettings::default().fft_size;
    let heard = plain.iter().zip(&earlier).position(|(a, b)| a != b);
    assert_eq!(
        heard,
        Some(after as usize + latency),
        "the later events change the output"
    );
    let first = plain.iter().zip(&edited).position(|(a, b)| a != b);
    assert_eq!(first, None, "the outputs part at sample {first:?}");
    assert_eq!(
        (none_stale, stale),
        (0, 1),
        "the step for the removed `side` is stale"
    );
}

/// The same check fails when the edit rebuilds the nodes: a fresh synth has no voice
/// sounding and a fresh compressor no frames, so the output changes at the edit. This is
/// what the editor exists to avoid, and proves the test above can tell.
#[test]
fn rebuilding_the_graph_instead_breaks_the_audible_branch_at_the_edit() {
    let blocks = 200;
    let (plain, _) = render(blocks, 70, |_| None);
    let (rebuilt, _) = render(blocks, 70, |_| {
        let (_, fresh) = Editor::new(graph(), CFG).unwrap();
        Some(fresh)
    });
    let first = plain.iter().zip(&rebuilt).position(|(a, b)| a != b);
    assert_eq!(
        first,
        Some(70 * BLOCK),
        "the outputs part at sample {first:?}"
    );
}

/// A node that counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Node for Counted {
    fn input_channels(&self) -> usize {
        1
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut out: AudioMut<'_>) {
        out.channel_mut(0).copy_from_slice(input.channel(0));
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A kept node is the same instance across 100 commits; a removed one is dropped with the
/// old schedule (which the engine hands back to a control thread), not at the take-over.
#[test]
fn kept_nodes_live_on_and_removed_ones_drop_with_the_old_schedule() {
    let drops = Arc::new(AtomicUsize::new(0));
    let mut g = Graph::new();
    let src = g.add(
        "src",
        Sine::new(
            1,
            SR,
            &SineSettings {
                freq: 100.0,
                amp: 1.0,
                ..SineSettings::default()
            },
        ),
    );
    let kept = g.add("kept", Counted(drops.clone()));
    let out = g.add("out", Output::new(1));
    g.connect(src, kept);
    g.connect(kept, out);
    g.set_output(out);
    let (mut editor, mut running) = Editor::new(g, CFG).unwrap();
    let gone = Arc::new(AtomicUsize::new(0));
    for k in 0..100usize {
        let name = format!("temp{k}");
        editor.add(name.as_str(), Counted(gone.clone())).unwrap();
        editor.connect("src", &name).unwrap();
        if k > 0 {
            editor.remove(&format!("temp{}", k - 1)).unwrap();
        }
        let mut next = editor.commit().unwrap();
        next.take_over(&mut running);
        std::mem::swap(&mut next, &mut running);
        assert_eq!(
            gone.load(Ordering::SeqCst),
            k.saturating_sub(1),
            "dropped at the take-over"
        );
        drop(next);
        assert_eq!(
            gone.load(Ordering::SeqCst),
            k,
            "not dropped with the old schedule"
        );
        running.process(BLOCK);
    }
    assert_eq!(drops.load(Ordering::SeqCst), 0, "the kept node was dropped");
    drop(running);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

/// Bad edits are refused with a message naming what is wrong, and a refused commit leaves
/// the graph as the last commit left it.
#[test]
fn bad_edits_are_refused_and_change_nothing() {
    let (mut e, _running) = Editor::new(graph(), CFG).unwrap();
    let err = e.remove("sinth").unwrap_err();
    assert_eq!(
        err.to_string(),
        "the graph has no node `sinth` (did you mean `synth`?)"
    );
    assert!(matches!(
        e.add("mix", Gain::new(1, 1.0)),
        Err(EditError::Exists { .. })
    ));
    assert!(matches!(
        e.add("a:b", Gain::new(1, 1.0)),
        Err(EditError::ReservedCharacter { .. })
    ));
    assert!(matches!(
        e.connect("mix", "tone"),
        Err(EditError::Graph(GraphError::NoInputs { .. }))
    ));
    assert!(matches!(
        e.disconnect("tone", "mix"),
        Err(EditError::NoSuchEdge { .. })
    ));
    assert!(matches!(
        e.remove("out"),
        Err(EditError::RemovesOutput { .. })
    ));
    assert!(matches!(
        e.connect("synth", "mix"),
        Err(EditError::EdgeExists { .. })
    ));
    assert!(!e.has_pending(), "refused edits left something pending");

    // A cycle: refused at commit, the batch (with its new node) dropped.
    e.add("loop", Gain::new(1, 1.0)).unwrap();
    e.connect("mix", "loop").unwrap();
    e.connect("loop", "side").unwrap();
    let err = e.commit().unwrap_err();
    assert!(
        matches!(err, EditError::Graph(GraphError::Cycle { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("cycle"), "{err}");
    assert!(!e.nodes().any(|n| n == "loop"));
    assert!(!e.has_pending());
    // Channel counts that differ across an edge.
    e.add("stereo", Gain::new(2, 1.0)).unwrap();
    e.connect("tone", "stereo").unwrap();
    let err = e.commit().unwrap_err();
    assert!(
        matches!(err, EditError::Graph(GraphError::ChannelMismatch { .. })),
        "{err}"
    );
    // The editor goes on from the last good commit: every node is kept, and the three
    // latency delays into `mix` (beside the compressor's path) too.
    e.add("fine", Gain::new(1, 1.0)).unwrap();
    e.connect("tone", "fine").unwrap();
    assert_eq!(e.commit().unwrap().kept_nodes(), graph().len() + 3);
}

/// A schedule that keeps nodes refuses to replace any schedule but the one it was
/// committed after.
#[test]
fn a_commit_takes_over_only_from_the_schedule_it_edits() {
    let (mut e, mut running) = Editor::new(graph(), CFG).unwrap();
    e.add("x", Gain::new(1, 1.0)).unwrap();
    let next = e.commit().unwrap();
    let (_, other) = Editor::new(graph(), CFG).unwrap();
    assert!(!next.can_take_over(&other));
    assert!(next.can_take_over(&running));
    running.process(BLOCK);
    assert!(next.can_take_over(&running));
}

/// The random test's model of a graph: (name, channels, source) per node; edges.
type Model = (Vec<(String, usize, bool)>, Vec<(String, String)>);

/// A pass-through of one or two channels that counts the instances alive.
struct Tracked {
    channels: usize,
    source: bool,
    alive: Arc<AtomicUsize>,
}

impl Tracked {
    fn new(channels: usize, source: bool, alive: &Arc<AtomicUsize>) -> Self {
        alive.fetch_add(1, Ordering::SeqCst);
        Self {
            channels,
            source,
            alive: alive.clone(),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.alive.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Node for Tracked {
    fn input_channels(&self) -> usize {
        if self.source {
            0
        } else {
            self.channels
        }
    }
    fn output_channels(&self) -> usize {
        self.channels
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut out: AudioMut<'_>) {
        for c in 0..self.channels {
            if self.source {
                out.channel_mut(c).fill(0.25);
            } else {
                out.channel_mut(c).copy_from_slice(input.channel(c));
            }
        }
    }
}

/// 10,000 random edits (some invalid: unknown names, duplicates, cycles, channel counts
/// that differ) checked against a model of the graph: every edit the model calls valid is
/// taken and every invalid one refused, each commit compiles exactly the model's nodes,
/// the schedule runs after taking over, and the live instances are always the model's
/// nodes: every removed node is dropped with the old schedule, none leaks.
#[test]
fn random_edit_sequences_match_a_model_and_leak_nothing() {
    let alive = Arc::new(AtomicUsize::new(0));
    let mut g = Graph::new();
    let out = g.add("out", Output::new(2));
    g.add("bus", Tracked::new(2, false, &alive));
    g.connect("bus", "out");
    g.set_output(out);
    let (mut editor, mut running) = Editor::new(g, CFG).unwrap();
    // The model: name -> (channels, source); edges; the committed copy to fall back to.
    let mut model: Model = (
        vec![("out".into(), 2, false), ("bus".into(), 2, false)],
        vec![("bus".into(), "out".into())],
    );
    let mut committed = model.clone();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rand = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut next_name = 0;
    let (mut taken, mut refused, mut commits) = (0, 0, 0);
    for _ in 0..10_000 {
        let names: Vec<String> = model.0.iter().map(|n| n.0.clone()).collect();
        let pick = |r: usize| {
            if r % 10 == 0 {
                "nosuch".to_string()
            } else {
                names[r % names.len()].clone()
            }
        };
        match rand(10) {
            0..=2 => {
                let channels = 1 + rand(2);
                let source = rand(3) == 0;
                let name = if rand(20) == 0 {
                    pick(rand(100))
                } else {
                    next_name += 1;
                    format!("n{next_name}")
                };
                let valid = !model.0.iter().any(|n| n.0 == name);
                let r = editor.add(name.as_str(), Tracked::new(channels, source, &alive));
                assert_eq!(r.is_ok(), valid, "add {name}: {r:?}");
                if valid {
                    model.0.push((name, channels, source));
                }
            }
            3 => {
                let name = pick(rand(100));
                let valid = model.0.iter().any(|n| n.0 == name) && name != "out";
                let r = editor.remove(&name);
                assert_eq!(r.is_ok(), valid, "remove {name}: {r:?}");
                if valid {
                    model.0.retain(|n| n.0 != name);
                    model.1.retain(|(f, t)| *f != name && *t != name);
                }
            }
            4..=6 => {
                let (from, to) = (pick(rand(100)), pick(rand(100)));
                let known = |x: &str| model.0.iter().find(|n| n.0 == x).cloned();
                let valid = match (known(&from), known(&to)) {
                    (Some(_), Some(t)) => !t.2 && !model.1.iter().any(|e| e.0 == from && e.1 == to),
                    _ => false,
                };
                let r = editor.connect(&from, &to);
                assert_eq!(r.is_ok(), valid, "connect {from} -> {to}: {r:?}");
                if valid {
                    model.1.push((from, to));
                }
            }
            7 => {
                if model.1.is_empty() {
                    continue;
                }
                let (from, to) = model.1[rand(model.1.len())].clone();
                editor.disconnect(&from, &to).unwrap();
                model.1.retain(|e| !(e.0 == from && e.1 == to));
                taken += 1;
            }
            _ => {
                commits += 1;
                match editor.commit() {
                    Ok(mut next) => {
                        assert!(
                            compiles(&model),
                            "the editor compiled what the model refuses"
                        );
                        let mut got: Vec<&str> = editor.nodes().collect();
                        let mut want: Vec<&str> = model.0.iter().map(|n| n.0.as_str()).collect();
                        got.sort_unstable();
                        want.sort_unstable();
                        assert_eq!(got, want);
                        next.take_over(&mut running);
                        std::mem::swap(&mut next, &mut running);
                        drop(next);
                        running.process(BLOCK);
                        committed = model.clone();
                        taken += 1;
                    }
                    Err(e) => {
                        assert!(!compiles(&model), "refused a graph that compiles: {e}");
                        assert!(!e.to_string().is_empty());
                        model = committed.clone();
                        refused += 1;
                    }
                }
                // Every live instance is a node of the committed graph (the output is
                // not tracked).
                assert_eq!(alive.load(Ordering::SeqCst), committed.0.len() - 1);
            }
        }
    }
    assert!(
        taken > 1000 && refused > 50 && commits > 1000,
        "{taken} {refused} {commits}"
    );
    drop(running);
    drop(editor);
    assert_eq!(alive.load(Ordering::SeqCst), 0, "instances leaked");
}

/// What the model says of a graph: it compiles when no edge joins different channel
/// counts and the edges make no cycle.
fn compiles(model: &Model) -> bool {
    let ch = |x: &str| model.0.iter().find(|n| n.0 == x).map(|n| n.1).unwrap();
    if model.1.iter().any(|(f, t)| ch(f) != ch(t)) {
        return false;
    }
    // Kahn's algorithm: every node is placed unless there is a cycle.
    let mut indegree: std::collections::HashMap<&str, usize> =
        model.0.iter().map(|n| (n.0.as_str(), 0)).collect();
    for (_, t) in &model.1 {
        *indegree.get_mut(t.as_str()).unwrap() += 1;
    }
    let mut ready: Vec<&str> = indegree
        .iter()
        .filter(|(_, &d)| d == 0)
        .map(|(n, _)| *n)
        .collect();
    let mut placed = 0;
    while let Some(n) = ready.pop() {
        placed += 1;
        for (f, t) in &model.1 {
            if f == n {
                let d = indegree.get_mut(t.as_str()).unwrap();
                *d -= 1;
                if *d == 0 {
                    ready.push(t.as_str());
                }
            }
        }
    }
    placed == model.0.len()
}
