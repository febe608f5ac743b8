//! Watchers see parameter values (a ramp's moving value included) and node levels on the
//! offline and virtual devices, and the audio side of watching is real-time safe.

use std::time::Duration;

use downbeat::control::When;
use downbeat::device::{Device, Offline, RunLength, Virtual};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::Shape;

mod support;

/// A constant 1.0 through a gain ramped by automation from 0 to 1 over `SECONDS`: the
/// gain's value at frame f is f / (SECONDS x 48000), and so is its output.
const AUTOMATION: &str = r#"gain = 0.0

[[automation]]
node = "g"
param = "gain"
points = [[SECONDS, 1.0, "linear"]]
"#;

fn engine(seconds: f64) -> Engine {
    let src = support::constant_through_gain(64)
        + &AUTOMATION.replace("SECONDS", &format!("{seconds:.1}"));
    Engine::new(Project::parse(&src, "watch.toml").unwrap().build().unwrap())
}

/// Runs `device` on a thread of its own while this one watches; checks every delivery
/// against the ramp's closed form and returns how many showed the ramp mid-way.
fn watch_a_ramp(mut device: impl Device + Send + 'static, seconds: f64) -> usize {
    let mut engine = engine(seconds);
    let mut watcher = engine.watch();
    let total = seconds * 48_000.0;
    let length = RunLength::seconds(seconds, 48_000);
    let run = std::thread::spawn(move || device.run(engine, length).unwrap());
    let mut mid_way = std::collections::BTreeSet::new();
    let mut previous = 0.0f32;
    while !run.is_finished() {
        if !watcher.wait(Duration::from_millis(50)) {
            continue;
        }
        let (frame, gain) = (watcher.frame(), watcher.value("g", "gain").unwrap());
        let want = (frame as f64 / total).min(1.0);
        assert!(
            (f64::from(gain) - want).abs() < 1e-6,
            "frame {frame}: the watcher saw {gain}, the ramp is at {want}"
        );
        // The gain's output is the gain: its peak since the previous delivery is the
        // highest value the ramp had in between.
        let peak = watcher.level("g").unwrap().peak;
        assert!(
            peak <= gain + 1e-6 && peak + 1e-6 >= previous.min(gain),
            "peak {peak} between {previous} and {gain}"
        );
        if gain > 0.0 && gain < 1.0 {
            mid_way.insert(gain.to_bits());
        }
        previous = gain;
    }
    let run = run.join().unwrap();
    watcher.wait(Duration::from_secs(1));
    assert_eq!(watcher.frame(), length.frames);
    assert_eq!(watcher.value("g", "gain"), Some(1.0));
    let levels = watcher.run_levels();
    let s = &levels.iter().find(|(n, _)| n == "s").unwrap().1;
    assert_eq!((s.peak, s.rms), (1.0, 1.0), "the constant source");
    drop(run);
    mid_way.len()
}

#[test]
fn a_watcher_sees_a_ramp_move_on_the_virtual_device() {
    let seen = watch_a_ramp(Virtual::new(None), 1.0);
    // A second at a 10 ms poll: dozens of deliveries; a loaded machine still gives a few.
    assert!(seen >= 5, "{seen} values mid-ramp");
}

#[test]
fn a_watcher_sees_a_ramp_move_on_the_offline_device() {
    // Offline runs as fast as it can: a long ramp, so that the watcher looks several times.
    let seen = watch_a_ramp(Offline::new(None), 600.0);
    assert!(seen >= 3, "{seen} values mid-ramp");
}

downbeat_rt::install_guard_allocator!();

/// The audio side of watching — taking the changed values and the levels, publishing them,
/// triggering the notifier — allocates, frees, locks and calls nothing.
#[test]
fn the_watch_tap_in_the_callback_is_real_time_safe() {
    let mut engine = engine(0.5);
    let mut watcher = engine.watch();
    let mut c = engine.controller(64);
    c.ramp(When::Frame(100), "g", "gain", Shape::Exponential, 0.5, 0.01)
        .unwrap();
    let mut block = vec![0.0f32; 64];
    engine.process(&mut block); // first touch of the output buffer outside the guard
    let report = downbeat_rt::guard::check(|| {
        for _ in 0..100 {
            engine.process(&mut block);
        }
    });
    report.assert_clean();
    assert!(watcher.wait(Duration::from_secs(1)));
    assert_eq!(watcher.frame(), 101 * 64);
    let gain = watcher.value("g", "gain").unwrap();
    assert!(gain > 0.0);
    let values = watcher.values();
    let listed = values
        .iter()
        .find(|r| (r.node.as_str(), r.param) == ("g", "gain"))
        .unwrap();
    assert_eq!(listed.value, gain);
    // The sine's live parameters hold their project values.
    let amp = values
        .iter()
        .find(|r| (r.node.as_str(), r.param) == ("s", "amp"))
        .unwrap();
    assert_eq!(amp.value, 1.0);
}

/// A one-channel pass-through whose output `peak` is the highest absolute sample of its
/// latest block: a meter, as a plugin's control output would be.
struct Follower {
    peak: f32,
}

static PEAK: &[downbeat_graph::ParamSpec] = &[downbeat_graph::ParamSpec {
    name: "peak",
    doc: "the latest block's peak",
    kind: downbeat_graph::ParamKind::Float {
        min: 0.0,
        max: f64::INFINITY,
        default: 0.0,
    },
    unit: downbeat_graph::Unit::None,
    live: false,
}];

impl downbeat_graph::Node for Follower {
    fn input_channels(&self) -> usize {
        1
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(
        &mut self,
        _: &downbeat_graph::ProcessContext,
        input: downbeat_graph::AudioRef<'_>,
        mut output: downbeat_graph::AudioMut<'_>,
    ) {
        output.channel_mut(0).copy_from_slice(input.channel(0));
        self.peak = input.channel(0).iter().fold(0.0f32, |p, x| p.max(x.abs()));
    }
    fn outputs(&self) -> &'static [downbeat_graph::ParamSpec] {
        PEAK
    }
    fn output_value(&self, _: usize) -> f32 {
        self.peak
    }
}

/// The `test-follower` node type, registered once per test binary.
struct FollowerType;

impl downbeat_graph::NodeFactory for FollowerType {
    fn name(&self) -> &str {
        "test-follower"
    }
    fn doc(&self) -> &str {
        "passes its input through and publishes its peak"
    }
    fn params(&self) -> &[downbeat_graph::ParamSpec] {
        &[]
    }
    fn create(
        &self,
        _: Vec<(String, downbeat_graph::ParamValue)>,
        _: &downbeat_graph::NodeConfig,
    ) -> Result<Box<dyn downbeat_graph::Node>, downbeat_graph::ParamError> {
        Ok(Box::new(Follower { peak: 0.0 }))
    }
}

/// The constant 1.0 through the gain `g` (0.5) into the follower `f`, then `extra`.
fn follower_project(extra: &str) -> Result<downbeat_graph::Schedule, String> {
    static REGISTER: std::sync::Once = std::sync::Once::new();
    REGISTER.call_once(|| downbeat::register_node_type(FollowerType).unwrap());
    let src = support::constant_through_gain(64).replace("s -> g -> out", "s -> g -> f -> out")
        + "gain = 0.5\n[nodes.f]\ntype = \"test-follower\"\n"
        + extra;
    Project::parse(&src, "follower.toml")
        .and_then(|p| p.build())
        .map_err(|e| e.to_string())
}

#[test]
fn a_nodes_output_reads_through_the_watcher_by_its_name_and_cannot_be_set() {
    let mut engine = Engine::new(follower_project("").unwrap());
    let mut watcher = engine.watch();
    let mut c = engine.controller(16);
    assert_eq!(
        watcher.value("f", "peak"),
        Some(0.0),
        "before the first block"
    );
    let mut block = vec![0.0f32; 64];
    engine.process(&mut block);
    assert!(watcher.wait(Duration::from_secs(1)));
    assert_eq!(watcher.value("f", "peak"), Some(0.5));
    c.step(When::Now, "g", "gain", 0.25).unwrap();
    engine.process(&mut block);
    assert!(watcher.wait(Duration::from_secs(1)));
    assert_eq!(watcher.value("f", "peak"), Some(0.25));
    let values = watcher.values();
    let listed = values
        .iter()
        .find(|r| (r.node.as_str(), r.param) == ("f", "peak"))
        .expect("an output is listed with the parameters");
    assert_eq!(listed.value, 0.25);

    let err = c.set("f", "peak", 1.0).unwrap_err();
    assert_eq!(
        err.message(),
        "`peak` of node `f` is an output, it cannot be set"
    );
    assert!(c.step(When::Now, "f", "peak", 1.0).is_err());
}

#[test]
fn automation_of_an_output_is_refused_where_the_project_names_it() {
    let err = follower_project(
        "\n[[automation]]\nnode = \"f\"\nparam = \"peak\"\npoints = [[0.5, 1.0, \"linear\"]]\n",
    )
    .unwrap_err();
    assert!(
        err.contains("`peak` of node `f` is an output, it cannot be set"),
        "{err}"
    );
    assert!(err.contains(":21:"), "points at the `param` line: {err}");
}

/// The watcher's audio side with a node that has outputs: reading them after the block and
/// publishing them allocates, frees, locks and calls nothing.
#[test]
fn outputs_in_the_watch_tap_are_real_time_safe() {
    let mut engine = Engine::new(follower_project("").unwrap());
    let mut watcher = engine.watch();
    let mut c = engine.controller(256);
    for k in 0..100u64 {
        let gain = if k % 2 == 0 { 0.25 } else { 0.75 };
        c.step(When::Frame(64 * (k + 1)), "g", "gain", gain)
            .unwrap();
    }
    let mut block = vec![0.0f32; 64];
    engine.process(&mut block); // first touch of the output buffer outside the guard
    let report = downbeat_rt::guard::check(|| {
        for _ in 0..100 {
            engine.process(&mut block);
        }
    });
    report.assert_clean();
    assert!(watcher.wait(Duration::from_secs(1)));
    // The last step, k = 99, set 0.75 at the last block's first frame.
    assert_eq!(watcher.value("f", "peak"), Some(0.75));
}

#[test]
fn an_osc_message_to_an_output_is_refused_saying_it_is_one() {
    use downbeat::control::osc::OscHandler;
    use rosc::{OscMessage, OscPacket, OscType};

    let mut engine = Engine::new(follower_project("").unwrap());
    let mut osc = OscHandler::new(engine.controller(16));
    let packet = |addr: &str| {
        rosc::encoder::encode(&OscPacket::Message(OscMessage {
            addr: addr.to_string(),
            args: vec![OscType::Float(0.75)],
        }))
        .unwrap()
    };
    let err = osc.handle(&packet("/node/f/peak")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`/node/f/peak`: `peak` of node `f` is an output, it cannot be set \
         (this node has no live parameters)"
    );
    assert!(osc.handle(&packet("/node/f/peak/step")).is_err());
    // The parameter beside it is taken: the refusal is the output's, not the node's.
    assert_eq!(osc.handle(&packet("/node/g/gain")), Ok(1));
}
