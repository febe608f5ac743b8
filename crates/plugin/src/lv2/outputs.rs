//! [`ControlOutputs`]: a plugin's control outputs (meters, a delay time, the latency) and its
//! worker's counters, readable from any thread while the node plays.
//!
//! After every run the node stores each control output in an atomic (a relaxed store per
//! port: real-time safe). A host reads them two ways:
//!
//! * as the node's counts, through its monitor ([`Node::monitor`], the same channel as every
//!   node's counters: `downbeat run` prints them after a run, in `--json` too): one count
//!   per output named `<symbol>_milli`, the value in thousandths, rounded (a count is an
//!   unsigned integer, so a negative value reads 0: use the exact reading below for meters
//!   in dB); and the worker's `worker_requests`, `worker_no_space` (a loss),
//!   `worker_responses_lost` (a loss) and `worker_late` (a loss);
//! * exactly, as `f32`, through [`Lv2Node::outputs`](super::Lv2Node::outputs) taken before
//!   the node moves to the audio thread.
//!
//! [`Node::monitor`]: downbeat_graph::Node::monitor

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use downbeat_graph::{NodeCount, NodeMonitor};

use super::worker::WorkerCounts;

/// The control outputs of one plugin node, and its worker's counters.
///
/// ```no_run
/// use downbeat_graph::NodeConfig;
/// use downbeat_plugin::lv2::Lv2Node;
///
/// let cfg = NodeConfig { sample_rate: 48000.0, max_block: 256 };
/// let delay = Lv2Node::load("urn:ardour:a-delay", &[], &cfg)?;
/// let outputs = delay.outputs(); // before the node moves to the audio thread
/// // … the node runs …
/// let ms = outputs.get("delaytime");
/// # Ok::<(), downbeat_plugin::lv2::Lv2Error>(())
/// ```
#[derive(Debug)]
pub struct ControlOutputs {
    /// (symbol, count name), per output.
    names: Vec<(String, &'static str)>,
    values: Box<[AtomicU32]>,
    worker: Option<Arc<WorkerCounts>>,
}

impl ControlOutputs {
    /// For outputs with these symbols, and a worker's counters if the plugin has one.
    pub(crate) fn new(symbols: &[String], worker: Option<Arc<WorkerCounts>>) -> Self {
        ControlOutputs {
            names: symbols.iter().map(|s| (s.clone(), count_name(s))).collect(),
            values: symbols.iter().map(|_| AtomicU32::new(0)).collect(),
            worker,
        }
    }

    /// Publishes output `i`. Real-time safe: one relaxed store.
    pub(crate) fn store(&self, i: usize, value: f32) {
        if let Some(slot) = self.values.get(i) {
            slot.store(value.to_bits(), Ordering::Relaxed);
        }
    }

    /// The latest value of the output `symbol`, as of the end of the latest run.
    pub fn get(&self, symbol: &str) -> Option<f32> {
        let i = self.names.iter().position(|(s, _)| s == symbol)?;
        Some(f32::from_bits(self.values[i].load(Ordering::Relaxed)))
    }

    /// Every output, (symbol, value), in port order.
    pub fn values(&self) -> Vec<(String, f32)> {
        self.names
            .iter()
            .zip(self.values.iter())
            .map(|((s, _), v)| (s.clone(), f32::from_bits(v.load(Ordering::Relaxed))))
            .collect()
    }

    /// The worker's counters, for a plugin with a worker.
    pub fn worker(&self) -> Option<&WorkerCounts> {
        self.worker.as_deref()
    }
}

/// `<symbol>_milli`, made once per symbol for the process (counts name themselves with
/// `&'static str`).
fn count_name(symbol: &str) -> &'static str {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    names
        .entry(symbol.to_string())
        .or_insert_with(|| Box::leak(format!("{symbol}_milli").into_boxed_str()))
}

impl NodeMonitor for ControlOutputs {
    fn counts(&self) -> Vec<NodeCount> {
        let mut counts = Vec::new();
        if let Some(w) = &self.worker {
            let count = |name, value: &std::sync::atomic::AtomicU64, loss| NodeCount {
                name,
                value: value.load(Ordering::Relaxed),
                loss,
            };
            counts.push(count("worker_requests", &w.requests, false));
            counts.push(count("worker_no_space", &w.no_space, true));
            counts.push(count("worker_responses_lost", &w.responses_lost, true));
            counts.push(count("worker_late", &w.late, true));
        }
        for ((_, name), v) in self.names.iter().zip(self.values.iter()) {
            let v = f64::from(f32::from_bits(v.load(Ordering::Relaxed)));
            counts.push(NodeCount {
                name,
                // Saturating: negative and NaN read 0.
                value: (v * 1000.0).round() as u64,
                loss: false,
            });
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_read_exactly_and_as_thousandths() {
        let o = ControlOutputs::new(&["gr".into(), "level".into()], None);
        o.store(0, 2.5);
        o.store(1, -12.0);
        assert_eq!(o.get("gr"), Some(2.5));
        assert_eq!(o.get("level"), Some(-12.0));
        assert_eq!(o.get("nope"), None);
        let counts = o.counts();
        assert_eq!((counts[0].name, counts[0].value), ("gr_milli", 2500));
        assert_eq!((counts[1].name, counts[1].value), ("level_milli", 0));
    }
}
