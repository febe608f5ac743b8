//! The devices that need no server: what they leave behind, what they record, and how the
//! virtual one goes on through callbacks that miss their deadline. (Their `--input` file
//! through the binary: `crates/cli/tests/input_file.rs`.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use downbeat::device::{Device, Offline, RunLength, Virtual};
use downbeat::project::Project;
use downbeat::{register_node_type, Engine, RegistryError};
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, NodeFactory, ParamError, ParamSpec, ParamValue,
    ProcessContext,
};

fn tone() -> Project {
    Project::parse(
        "block_size = 480\nedges = [\"s -> out\"]\n[nodes.s]\ntype = \"sine\"\n[nodes.out]\ntype = \"output\"\n",
        "tone.toml",
    )
    .unwrap()
}

/// The calling thread's scheduling policy and priority, and its timer slack.
#[cfg(target_os = "linux")]
fn thread_settings() -> (i32, i32, i32) {
    let (mut policy, mut param) = (0, libc::sched_param { sched_priority: 0 });
    // SAFETY: the calling thread; both out-pointers are valid.
    let rc = unsafe { libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut param) };
    assert_eq!(rc, 0);
    // SAFETY: PR_GET_TIMERSLACK takes no argument and reads the calling thread's slack.
    let slack = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    (policy, param.sched_priority, slack)
}

#[cfg(target_os = "linux")]
#[test]
fn the_virtual_device_leaves_the_calling_threads_scheduling_alone() {
    std::thread::spawn(|| {
        let before = thread_settings();
        let engine = Engine::new(tone().build().unwrap());
        let run = Virtual::new(None)
            .run(engine, RunLength { frames: 4800 })
            .unwrap();
        assert_eq!(run.engine.summary().blocks, 10);
        assert_eq!(
            thread_settings(),
            before,
            "(policy, priority, timer slack) changed"
        );
    })
    .join()
    .unwrap();
}

#[test]
fn the_virtual_recording_matches_an_offline_render() {
    let dir = std::env::temp_dir().join(format!("downbeat-devices-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (live, offline) = (dir.join("virtual.wav"), dir.join("offline.wav"));
    let length = RunLength { frames: 4800 + 123 };
    let engine = Engine::new(tone().build().unwrap());
    Virtual::new(Some(live.clone()))
        .run(engine, length)
        .unwrap();
    let engine = Engine::new(tone().build().unwrap());
    Offline::new(Some(offline.clone()))
        .run(engine, length)
        .unwrap();
    let read = |p: &std::path::Path| -> Vec<f32> {
        hound::WavReader::open(p)
            .unwrap()
            .samples::<f32>()
            .map(Result::unwrap)
            .collect()
    };
    let (a, b) = (read(&live), read(&offline));
    assert_eq!(a.len(), 2 * 4923);
    assert!(a == b, "the virtual device recorded something else");
    assert!(a.iter().any(|&s| s != 0.0));
}

/// Blocks the `test-overrun` nodes have processed, across the process (one test uses them).
static OVERRUN_BLOCKS: AtomicU64 = AtomicU64::new(0);
/// Every this many blocks, starting with the first, a `test-overrun` node takes three block
/// periods.
const OVERRUN_EVERY: u64 = 5;

/// Silence, and three block periods of sleep every [`OVERRUN_EVERY`] blocks: a callback
/// that needs three times its budget, whatever the machine.
struct Overrun;

impl NodeFactory for Overrun {
    fn name(&self) -> &str {
        "test-overrun"
    }
    fn doc(&self) -> &str {
        "overruns its block every few blocks"
    }
    fn params(&self) -> &[ParamSpec] {
        &[]
    }
    fn create(
        &self,
        _params: Vec<(String, ParamValue)>,
        _cfg: &NodeConfig,
    ) -> Result<Box<dyn Node>, ParamError> {
        Ok(Box::new(OverrunNode))
    }
}

struct OverrunNode;

impl Node for OverrunNode {
    fn input_channels(&self) -> usize {
        0
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, ctx: &ProcessContext, _input: AudioRef<'_>, mut output: AudioMut<'_>) {
        output.channel_mut(0).fill(0.0);
        if OVERRUN_BLOCKS.fetch_add(1, Ordering::Relaxed) % OVERRUN_EVERY == 0 {
            let period = ctx.frames as f64 / f64::from(ctx.sample_rate);
            std::thread::sleep(Duration::from_secs_f64(3.0 * period));
        }
    }
}

#[test]
fn the_virtual_device_counts_missed_deadlines_and_produces_every_block() {
    match register_node_type(Overrun) {
        Ok(()) | Err(RegistryError::NameTaken { .. }) => {}
        Err(e) => panic!("{e}"),
    }
    let project = Project::parse(
        "block_size = 480\nedges = [\"x -> out\"]\n[nodes.x]\ntype = \"test-overrun\"\n\
         [nodes.out]\ntype = \"output\"\nchannels = 1\n",
        "overrun.toml",
    )
    .unwrap();
    // 50 blocks of 10 ms, 10 of which take 30 ms: half a second, as the blocks after each
    // slow one are made at once to catch up.
    let blocks = 50;
    let run = Virtual::new(None)
        .run(
            Engine::new(project.build().unwrap()),
            RunLength {
                frames: blocks * 480,
            },
        )
        .unwrap();
    assert_eq!(run.report.frames, blocks * 480, "the run stopped short");
    assert_eq!(OVERRUN_BLOCKS.load(Ordering::Relaxed), blocks);
    let summary = run.engine.summary();
    assert_eq!(summary.blocks, blocks);
    // At least the slow ones; a busy machine may make others late too.
    let slow = blocks / OVERRUN_EVERY;
    assert!(
        (slow..=blocks).contains(&summary.missed),
        "{} deadlines missed, {slow} blocks overran: {summary:?}",
        summary.missed
    );
    assert!(summary.load_max >= 3.0, "{summary:?}");
}
