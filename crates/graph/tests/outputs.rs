//! Node outputs (`Node::outputs`, `Node::output_value`): read by the schedule after a block
//! and reported by `take_param_changes` like parameter values, only when their bits change,
//! under the name the node declares; refused as the target of an event; and real-time safe
//! to read.

use downbeat_graph::{
    AudioMut, AudioRef, Change, CompileConfig, ControlError, Event, Graph, Node, ParamId,
    ParamKind, ParamSpec, ProcessContext, Schedule, Unit,
};
use downbeat_nodes::Output;
use downbeat_rt::guard;

downbeat_rt::install_guard_allocator!();

static LEVEL: &[ParamSpec] = &[ParamSpec {
    name: "level",
    doc: "the constant the node outputs",
    kind: ParamKind::Float {
        min: -1.0,
        max: 1.0,
        default: 0.5,
    },
    unit: Unit::None,
    live: true,
}];

static LAST: &[ParamSpec] = &[ParamSpec {
    name: "last",
    doc: "the last sample the node wrote",
    kind: ParamKind::Float {
        min: -1.0,
        max: 1.0,
        default: 0.0,
    },
    unit: Unit::None,
    live: false,
}];

/// A constant source whose output `last` is the last sample it wrote.
struct Level {
    level: f32,
    last: f32,
}

impl Node for Level {
    fn input_channels(&self) -> usize {
        0
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, _: &ProcessContext, _: AudioRef<'_>, mut out: AudioMut<'_>) {
        out.channel_mut(0).fill(self.level);
        self.last = self.level;
    }
    fn params(&self) -> &'static [ParamSpec] {
        LEVEL
    }
    fn set_param(&mut self, index: usize, value: f32) -> bool {
        self.level = value;
        index == 0
    }
    fn get_param(&self, index: usize) -> Option<f32> {
        (index == 0).then_some(self.level)
    }
    fn outputs(&self) -> &'static [ParamSpec] {
        LAST
    }
    fn output_value(&self, index: usize) -> f32 {
        assert_eq!(index, 0, "asked for an output it does not declare");
        self.last
    }
}

/// Declares no outputs: the schedule must never ask it for one.
struct Silent;

impl Node for Silent {
    fn input_channels(&self) -> usize {
        1
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, _: &ProcessContext, input: AudioRef<'_>, mut out: AudioMut<'_>) {
        out.channel_mut(0).copy_from_slice(input.channel(0));
    }
    fn output_value(&self, _: usize) -> f32 {
        panic!("a node without outputs was asked for one")
    }
}

fn schedule() -> Schedule {
    let mut g = Graph::new();
    let m = g.add(
        "m",
        Level {
            level: 0.5,
            last: 0.0,
        },
    );
    let s = g.add("s", Silent);
    let out = g.add("out", Output::new(1));
    g.connect(m, s);
    g.connect(s, out);
    g.set_output(out);
    g.compile(CompileConfig {
        sample_rate: 48_000,
        max_block: 64,
    })
    .unwrap()
}

fn changes(s: &mut Schedule) -> Vec<(ParamId, f32)> {
    let mut seen = Vec::new();
    s.take_param_changes(|id, v| seen.push((id, v)));
    seen
}

#[test]
fn an_output_is_reported_after_a_block_only_when_its_bits_change() {
    let mut s = schedule();
    let table = s.param_table();
    let level = table.resolve("m", "level").unwrap();
    let last = table.resolve_watched("m", "last").unwrap();
    assert!(table.is_output(last) && !table.is_output(level));
    assert_eq!(table.names(last), ("m", "last"));
    assert_eq!(table.range(last), (-1.0, 1.0));
    assert_eq!(table.initial(last), 0.0, "nothing processed yet");
    assert_eq!(table.watched().collect::<Vec<_>>(), [level, last]);
    assert_eq!(
        table.live().collect::<Vec<_>>(),
        [level],
        "outputs are not live"
    );

    s.process(64);
    assert_eq!(changes(&mut s), [(last, 0.5)]);
    assert_eq!(s.param_value(last), Some(0.5));
    s.process(64);
    assert_eq!(changes(&mut s), [], "the same value is not reported again");

    s.push_event(Event::param(None, level, Change::Step(0.0)))
        .unwrap();
    s.process(64);
    assert_eq!(changes(&mut s), [(level, 0.0), (last, 0.0)]);
    // Bits, not values: -0 is a change.
    s.push_event(Event::param(None, level, Change::Step(-0.0)))
        .unwrap();
    s.process(64);
    let seen = changes(&mut s);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        (seen[1].0, seen[1].1.to_bits()),
        (last, (-0.0f32).to_bits())
    );
}

#[test]
fn an_output_cannot_be_set() {
    let mut s = schedule();
    let table = s.param_table();
    let err = table.resolve("m", "last").unwrap_err();
    assert!(matches!(err, ControlError::Output { .. }), "{err:?}");
    assert_eq!(
        err.message(),
        "`last` of node `m` is an output, it cannot be set"
    );
    assert_eq!(err.help().as_deref(), Some("live parameters: `level`"));
    // An id for reading, pushed as an event anyway, is refused on both paths in.
    let last = table.resolve_watched("m", "last").unwrap();
    let event = Event::param(None, last, Change::Step(1.0));
    assert_eq!(s.push_event(event), Err(ControlError::Stale));
    assert_eq!(s.set_timeline(vec![event]), Err(ControlError::Stale));
    s.process(64);
    assert_eq!(s.param_value(last), Some(0.5), "the node's own value");
    // A name that is neither stays unknown.
    assert!(matches!(
        table.resolve_watched("m", "lats"),
        Err(ControlError::UnknownParam { .. })
    ));
}

#[test]
fn reading_outputs_after_a_block_is_real_time_safe() {
    let mut s = schedule();
    let level = s.param_table().resolve("m", "level").unwrap();
    s.process(64);
    changes(&mut s);
    let mut seen = 0u32;
    let report = guard::check(|| {
        for k in 0..100u32 {
            let v = (k % 7) as f32 / 8.0;
            s.push_event(Event::param(None, level, Change::Step(v)))
                .unwrap();
            s.process(64);
            s.take_param_changes(|_, _| seen += 1);
        }
    });
    report.assert_clean();
    // Every block changes the level, and so the output: both are reported each time.
    assert_eq!(seen, 200, "changes seen");
}
