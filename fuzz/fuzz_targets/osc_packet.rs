//! OSC datagrams: one UDP payload through `OscHandler::handle`, the handler behind
//! `downbeat run --osc`, into an engine playing a project with every kind of live parameter
//! and two instruments; then one block renders what was accepted. As on a live server, the
//! engine runs on from one datagram to the next (building it per input cost 20 times the
//! rest); it is built again every `FRESH_AFTER` inputs and whenever its queue is half full,
//! since events far in the future wait there and a full queue refuses everything after.
#![no_main]

use std::sync::{Mutex, PoisonError};

use downbeat::control::osc::OscHandler;
use downbeat::Engine;
use libfuzzer_sys::fuzz_target;

/// The CLI's queue: far more than one datagram's messages.
const QUEUE: usize = 4096;
const FRESH_AFTER: u32 = 1000;

struct Live {
    engine: Engine,
    osc: OscHandler,
    out: Vec<f32>,
    inputs: u32,
}

impl Live {
    fn new() -> Self {
        let project = downbeat_fuzz::instruments_project();
        let mut engine = Engine::new(project.build().expect("the fixed project builds"));
        let osc = OscHandler::new(engine.controller(QUEUE));
        let mut out = vec![0.0f32; engine.block_size() * engine.channels()];
        // The first block publishes the instruments to the controller, as on a running device.
        engine.process(&mut out);
        Self {
            engine,
            osc,
            out,
            inputs: 0,
        }
    }
}

static LIVE: Mutex<Option<Live>> = Mutex::new(None);

fuzz_target!(
    init: {
        let _ = downbeat_fuzz::instruments_project().build();
    },
    |data: &[u8]| {
        let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
        let stale = live
            .as_ref()
            .is_none_or(|l| l.inputs >= FRESH_AFTER || l.osc.controller().available() < QUEUE / 2);
        if stale {
            *live = Some(Live::new());
        }
        let l = live.as_mut().expect("made above");
        l.inputs += 1;
        if let Err(why) = l.osc.handle(data) {
            let _ = why.to_string();
        }
        l.engine.process(&mut l.out);
    }
);
