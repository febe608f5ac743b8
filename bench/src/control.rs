//! The control suite (issue 14): what live control costs the audio thread, and how soon a
//! control message is heard.
//!
//! * `absorb` (`fanin84.toml`, serial, unpaced): each block gets `k` parameter events from a
//!   [`Controller`], each a smoothed set of a random live parameter at a random frame of the
//!   block (so nodes are cut into sub-blocks and smoothing ramps run), for `k` in
//!   [`SWEEP`]. A fresh engine per measurement renders the same [`BLOCKS`] blocks, so the
//!   plucked strings' silences fall alike and only the events differ; a second engine
//!   without events runs in lockstep with it, block by block (alternating which goes first),
//!   so both see the same part of the song and the same background load. Rows per `k`: the
//!   median load (callback time / block period) with events, and the median over blocks of
//!   (time with events / time without); summary row `events_at_+10%_load`: the events per
//!   block at which that ratio reaches 1.1, interpolated linearly between the two sweep
//!   points around it.
//! * `osc-latency` (`hello.toml` on the virtual device): a thread sends OSC messages over
//!   UDP loopback at random 5-15 ms intervals; an [`OscHandler`] on its own socket thread
//!   (the code `downbeat run --osc` serves with) turns them into events, and the run's
//!   recording gives the frame each took effect at. Latency is that frame less the frame
//!   the engine's timeline was at when the packet was sent (from the controller's
//!   wall-clock mapping, [`Controller::frame_at`]), and also less the one when the server's
//!   `recv` returned; in frames and in µs of the timeline.
//!
//! [`Controller`]: downbeat::control::Controller
//! [`Controller::frame_at`]: downbeat::control::Controller::frame_at

use std::net::UdpSocket;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use downbeat::control::osc::OscHandler;
use downbeat::control::When;
use downbeat::device::{Device, RunLength, Virtual};
use downbeat::project::Project;
use downbeat::Engine;
use downbeat_graph::{Change, ParamId};

use crate::report::{quantile, Report};
use crate::rng::Rng;
use crate::Common;

/// Events per block measured.
pub const SWEEP: [usize; 8] = [0, 1, 4, 16, 64, 256, 1024, 4096];
/// Blocks per measurement (about 3.5 s of audio at 44.1 kHz / 512).
pub const BLOCKS: usize = 300;
/// OSC messages per latency run.
const MESSAGES: usize = 200;

fn project(name: &str) -> Project {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/projects")
        .join(name);
    Project::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// An engine on `project` with a controller and, per live parameter, two values in range
/// to alternate between.
struct Side {
    engine: Engine,
    control: downbeat::control::Controller,
    targets: Vec<(ParamId, [f32; 2])>,
    out: Vec<f32>,
}

fn side(project: &Project) -> Side {
    let most = SWEEP[SWEEP.len() - 1].max(1);
    let mut engine = Engine::new(project.build().expect("fanin84 builds"));
    engine.schedule_mut().set_event_capacity(most);
    let control = engine.controller(2 * most);
    let table = control.table().clone();
    let targets = table
        .live()
        .map(|id| {
            let v = table.initial(id);
            let other = [v * 0.95, v * 1.05, v + 0.5, v - 0.5]
                .into_iter()
                .find(|&w| w != v && table.check(id, &Change::Set(w)).is_ok())
                .unwrap_or(v);
            (id, [v, other])
        })
        .collect();
    let out = vec![0.0f32; engine.block_size() * engine.channels()];
    let mut s = Side {
        engine,
        control,
        targets,
        out,
    };
    // Two blocks outside the measurement: first touches of every buffer.
    s.engine.process(&mut s.out);
    s.engine.process(&mut s.out);
    s
}

/// Times one block of `s`, in seconds.
fn timed(s: &mut Side) -> f64 {
    let t = Instant::now();
    s.engine.process(&mut s.out);
    t.elapsed().as_secs_f64()
}

/// `blocks` blocks of two fresh engines on `project` in lockstep, one with `k` events per
/// block, the other with none, alternating which goes first. Pairing block by block makes
/// both see the same part of the song and the same moment of background load. Returns the
/// median load with events and the median, over blocks, of time with / time without.
fn absorb(project: &Project, k: usize, blocks: usize, seed: u64) -> (f64, f64) {
    let (mut none, mut some) = (side(project), side(project));
    let budget = some.engine.block_size() as f64 / f64::from(some.engine.sample_rate());
    let block = some.engine.block_size() as u64;
    let mut rng = Rng(seed | 1);
    let (mut loads, mut ratios) = (Vec::with_capacity(blocks), Vec::with_capacity(blocks));
    for b in 0..blocks {
        let start = some.engine.schedule().position();
        for _ in 0..k {
            let (id, values) = some.targets[rng.next() as usize % some.targets.len()];
            let frame = start + rng.next() % block;
            let value = values[(rng.next() & 1) as usize];
            some.control
                .send(When::Frame(frame), id, Change::Set(value))
                .expect("the queue holds a block's events");
        }
        let (t_none, t_some) = if b % 2 == 0 {
            let a = timed(&mut none);
            (a, timed(&mut some))
        } else {
            let b = timed(&mut some);
            (timed(&mut none), b)
        };
        loads.push(t_some / budget);
        ratios.push(t_some / t_none);
    }
    let stats = some.engine.schedule().event_stats();
    assert_eq!(stats.applied, (k * blocks) as u64, "every event applied");
    loads.sort_by(f64::total_cmp);
    ratios.sort_by(f64::total_cmp);
    (quantile(&loads, 0.5), quantile(&ratios, 0.5))
}

/// The events per block at which `ratios` (one per [`SWEEP`] entry) first reach 1.1,
/// interpolated linearly between the two sweep points around it; `None` when the sweep never
/// gets there.
fn at_ten_percent(ratios: &[f64]) -> Option<f64> {
    let limit = 1.1;
    for i in 1..ratios.len() {
        if ratios[i] >= limit {
            let (k0, k1) = (SWEEP[i - 1] as f64, SWEEP[i] as f64);
            let (r0, r1) = (ratios[i - 1], ratios[i]);
            let t = if r1 > r0 {
                ((limit - r0) / (r1 - r0)).clamp(0.0, 1.0)
            } else {
                1.0
            };
            return Some(k0 + t * (k1 - k0));
        }
    }
    None
}

/// An OSC message `/node/tone/freq ,f value`, encoded by hand (OSC 1.0: strings
/// NUL-terminated and padded to 4 bytes, arguments big-endian).
fn freq_message(value: f32) -> Vec<u8> {
    let mut m = Vec::with_capacity(28);
    for text in ["/node/tone/freq", ",f"] {
        m.extend_from_slice(text.as_bytes());
        m.extend(std::iter::repeat_n(0u8, 4 - text.len() % 4));
    }
    m.extend_from_slice(&value.to_be_bytes());
    m
}

/// One OSC latency run: per message, the latency from its send and from its receipt, in
/// frames.
fn osc_latency(messages: usize, seed: u64) -> (Vec<f64>, Vec<f64>, u32) {
    let mut engine = Engine::new(project("hello.toml").build().expect("hello builds"));
    let rate = engine.sample_rate();
    let reader = engine.record_events();
    let handler = OscHandler::new(engine.controller(4096));
    let server = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
    server
        .set_read_timeout(Some(Duration::from_millis(20)))
        .expect("set a timeout");
    let addr = server.local_addr().expect("bound");
    // Long enough for every message at 15 ms at most, and a margin.
    let seconds = 0.5 + messages as f64 * 0.016;
    let length = RunLength::seconds(seconds, rate);
    let run = std::thread::spawn(move || {
        Virtual::new(None)
            .run(engine, length)
            .expect("the virtual device runs")
    });
    // index -> instant sent (written before the send); (frame at send, frame at receipt).
    let sent: Arc<Mutex<Vec<Option<Instant>>>> = Arc::new(Mutex::new(vec![None; messages]));
    let stop = Arc::new(AtomicBool::new(false));
    let receiver = {
        let (sent, stop) = (Arc::clone(&sent), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut handler = handler;
            let mut frames = vec![(0u64, 0u64); messages];
            let mut buf = vec![0u8; 65_536];
            while !stop.load(Ordering::Acquire) {
                let Ok(len) = server.recv(&mut buf) else {
                    continue;
                };
                // Both instants mapped now, through the latest block start.
                let received = handler.controller().frame_at(Instant::now());
                handler.handle(&buf[..len]).expect("a valid message");
                let value = f32::from_be_bytes(buf[len - 4..len].try_into().expect("4 bytes"));
                let index = (value - 100.0).round() as usize;
                let at = sent.lock().expect("not poisoned")[index].expect("sent before");
                frames[index] = (handler.controller().frame_at(at), received);
            }
            frames
        })
    };
    let mut rng = Rng(seed | 1);
    let client = UdpSocket::bind("127.0.0.1:0").expect("a loopback socket");
    // Let the device start its timeline.
    std::thread::sleep(Duration::from_millis(200));
    for i in 0..messages {
        std::thread::sleep(Duration::from_micros(rng.between(5_000.0, 15_000.0) as u64));
        // The frequency tells the recording which message it was.
        let packet = freq_message(100.0 + i as f32);
        sent.lock().expect("not poisoned")[i] = Some(Instant::now());
        client.send_to(&packet, addr).expect("loopback send");
    }
    drop(run.join().expect("the device thread"));
    stop.store(true, Ordering::Release);
    let frames = receiver.join().expect("the receiver thread");
    let dir = std::env::temp_dir().join(format!("downbeat-bench-control-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("events.jsonl");
    reader.write(&file).expect("write the recording");
    let text = std::fs::read_to_string(&file).expect("read the recording");
    let _ = std::fs::remove_dir_all(&dir);
    let mut from_send = Vec::new();
    let mut from_receipt = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a recorded event");
        let index = (v["value"].as_f64().expect("a set") - 100.0).round() as usize;
        let applied = v["frame"].as_u64().expect("a frame") as f64;
        from_send.push(applied - frames[index].0 as f64);
        from_receipt.push(applied - frames[index].1 as f64);
    }
    assert_eq!(from_send.len(), messages, "every message applied");
    (from_send, from_receipt, rate)
}

pub fn run(common: &Common) -> Report {
    let mut report = Report::new("control");
    let runs = common.runs();
    if common.wants("absorb") {
        let p = project("fanin84.toml");
        let blocks = if common.quick { 20 } else { BLOCKS };
        let mut loads = vec![Vec::new(); SWEEP.len()];
        let mut ratios = vec![Vec::new(); SWEEP.len()];
        let mut thresholds = Vec::new();
        for run in 0..runs {
            let mut this = vec![0.0; SWEEP.len()];
            // Alternating order, so that a machine getting busier favours no end of the sweep.
            let mut order: Vec<usize> = (0..SWEEP.len()).collect();
            if run % 2 == 1 {
                order.reverse();
            }
            for i in order {
                let (load, ratio) = absorb(&p, SWEEP[i], blocks, 0x5eed + run as u64);
                this[i] = ratio;
                loads[i].push(load);
                ratios[i].push(ratio);
            }
            thresholds.push(at_ten_percent(&this).unwrap_or(f64::INFINITY));
        }
        for (i, k) in SWEEP.iter().enumerate() {
            report.add(
                &format!("absorb_{k}_events"),
                "downbeat",
                "load p50",
                &loads[i],
            );
            report.add(
                &format!("absorb_{k}_events_vs_none"),
                "downbeat",
                "time ratio p50",
                &ratios[i],
            );
        }
        report.add(
            "events_at_+10%_load",
            "downbeat",
            "events/block",
            &thresholds,
        );
        report.notes.push(format!(
            "absorb: fanin84.toml ({} nodes, {} Hz / {} frames), serial, unpaced; {blocks} \
             blocks per measurement, two engines in lockstep (k events / none, alternating \
             which goes first), {runs} run(s) in alternating sweep order; each event a \
             smoothed set of a random live parameter at a random frame; ratio rows: median \
             over blocks of time with / time without; the threshold: where that ratio \
             reaches 1.1 (a run that never does counts as infinite)",
            p.nodes.len(),
            p.sample_rate,
            p.block_size
        ));
    }
    if common.wants("osc-latency") {
        let messages = if common.quick { 20 } else { MESSAGES };
        let mut rows: [Vec<f64>; 8] = Default::default();
        let mut rate = 48_000;
        for run in 0..runs {
            let (mut send, mut receipt, r) = osc_latency(messages, 0xc0de + run as u64);
            rate = r;
            send.sort_by(f64::total_cmp);
            receipt.sort_by(f64::total_cmp);
            let us = 1e6 / f64::from(r);
            for (j, v) in [
                quantile(&send, 0.5),
                quantile(&send, 0.99),
                quantile(&receipt, 0.5),
                quantile(&receipt, 0.99),
            ]
            .into_iter()
            .enumerate()
            {
                rows[j].push(v);
                rows[4 + j].push(v * us);
            }
        }
        let names = [
            "osc_send_to_frame_p50",
            "osc_send_to_frame_p99",
            "osc_recv_to_frame_p50",
            "osc_recv_to_frame_p99",
        ];
        for (j, name) in names.iter().enumerate() {
            report.add(name, "downbeat", "frames", &rows[j]);
            report.add(name, "downbeat", "us", &rows[4 + j]);
        }
        report.notes.push(format!(
            "osc-latency: hello.toml on the virtual device ({rate} Hz / 256 frames), \
             {messages} messages per run at random 5-15 ms intervals over UDP loopback, \
             {runs} run(s); rows: median, min and max over the runs of each run's p50 / p99"
        ));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_interpolated_between_the_sweep_points_around_it() {
        // 1.05 at 1 event, 1.15 at 4: 1.1 is half-way from 1 to 4.
        let loads = [1.0, 1.05, 1.15, 2.0, 2.0, 2.0, 2.0, 2.0];
        let k = at_ten_percent(&loads).unwrap();
        assert!((k - 2.5).abs() < 1e-9, "{k}");
        assert_eq!(at_ten_percent(&[1.0; 8]), None);
    }
}
