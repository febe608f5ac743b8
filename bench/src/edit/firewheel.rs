//! Firewheel's side of the comparison: the twin kernels as Firewheel nodes, its context on
//! the control thread and its processor on the audio thread, driven block by block as a
//! custom backend drives it (no device: its cpal backend is not built).
//!
//! An edit is `add_node` and `connect` (cycle check off: the compile finds cycles anyway,
//! as Downbeat's does) or `remove_node`, then `FirewheelContext::update`, which compiles a
//! new schedule when the graph changed, builds the new node's processor and sends both to
//! the processor; its next `process` swaps the schedule in, inserts the new processor into
//! its arena and sends the old schedule (with removed processors) back, to be dropped by
//! the next `update`. The arena is sized for the whole graph from the start, so an edit never
//! makes it grow (a growth would move every node on the audio thread).

use std::fmt::Display;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use audioadapter_buffers::direct::InterleavedSlice;
use firewheel::backend::BackendProcessInfo;
use firewheel::channel_config::{ChannelConfig, ChannelCount};
use firewheel::node::{
    AudioNode, AudioNodeInfo, AudioNodeProcessor, ConstructProcessorContext, EmptyConfig,
    NodeError, NodeID, ProcBuffers, ProcExtra, ProcInfo, ProcessStatus, StreamStatus,
};
use firewheel::processor::FirewheelProcessor;
use firewheel::{ActivateInfo, FirewheelConfig, FirewheelContext};

use super::harness::{Audio, Control, Halves};
use super::nodes::{copy, dc, Osc, LEVEL};
use super::{Error, BLOCK, RATE};

fn fw(e: impl Display) -> Error {
    Error::Firewheel(e.to_string())
}

fn mono(inputs: ChannelCount) -> ChannelConfig {
    ChannelConfig {
        num_inputs: inputs,
        num_outputs: ChannelCount::MONO,
    }
}

struct OscNode(Osc);

impl AudioNode for OscNode {
    type Configuration = EmptyConfig;

    fn info(&self, _: &EmptyConfig) -> Result<AudioNodeInfo, NodeError> {
        Ok(AudioNodeInfo::new()
            .debug_name("osc")
            .channel_config(mono(ChannelCount::ZERO)))
    }

    fn construct_processor(
        &self,
        _: &EmptyConfig,
        _: ConstructProcessorContext,
    ) -> Result<impl AudioNodeProcessor, NodeError> {
        Ok(OscProcessor(self.0))
    }
}

struct OscProcessor(Osc);

impl AudioNodeProcessor for OscProcessor {
    fn process(&mut self, _: &ProcInfo, buffers: ProcBuffers, _: &mut ProcExtra) -> ProcessStatus {
        self.0.fill(buffers.outputs[0]);
        ProcessStatus::OutputsModified
    }
}

struct SumNode;

impl AudioNode for SumNode {
    type Configuration = EmptyConfig;

    fn info(&self, _: &EmptyConfig) -> Result<AudioNodeInfo, NodeError> {
        Ok(AudioNodeInfo::new()
            .debug_name("mix")
            .channel_config(mono(ChannelCount::MONO)))
    }

    fn construct_processor(
        &self,
        _: &EmptyConfig,
        _: ConstructProcessorContext,
    ) -> Result<impl AudioNodeProcessor, NodeError> {
        Ok(SumProcessor)
    }
}

struct SumProcessor;

impl AudioNodeProcessor for SumProcessor {
    fn process(&mut self, _: &ProcInfo, buffers: ProcBuffers, _: &mut ProcExtra) -> ProcessStatus {
        copy(buffers.outputs[0], buffers.inputs[0]);
        ProcessStatus::OutputsModified
    }
}

struct DcNode;

impl AudioNode for DcNode {
    type Configuration = EmptyConfig;

    fn info(&self, _: &EmptyConfig) -> Result<AudioNodeInfo, NodeError> {
        Ok(AudioNodeInfo::new()
            .debug_name("probe")
            .channel_config(mono(ChannelCount::ZERO)))
    }

    fn construct_processor(
        &self,
        _: &EmptyConfig,
        _: ConstructProcessorContext,
    ) -> Result<impl AudioNodeProcessor, NodeError> {
        Ok(DcProcessor)
    }
}

struct DcProcessor;

impl AudioNodeProcessor for DcProcessor {
    fn process(&mut self, _: &ProcInfo, buffers: ProcBuffers, _: &mut ProcExtra) -> ProcessStatus {
        dc(buffers.outputs[0], LEVEL);
        ProcessStatus::OutputsModified
    }
}

struct FirewheelControl {
    ctx: FirewheelContext,
    mix: NodeID,
    probe: Option<NodeID>,
}

impl Control for FirewheelControl {
    fn tidy(&mut self) -> Result<(), Error> {
        // Nothing changed since the last compile: this only drops what came back.
        self.ctx.update().map_err(fw)
    }

    fn edit(&mut self, add: bool) -> Result<f64, Error> {
        if add {
            let id = self.ctx.add_node(DcNode, None).map_err(fw)?;
            self.ctx
                .connect(id, self.mix, &[(0, 0)], false)
                .map_err(fw)?;
            self.probe = Some(id);
        } else if let Some(id) = self.probe.take() {
            self.ctx.remove_node(id).map_err(fw)?;
        }
        let t = Instant::now();
        self.ctx.update().map_err(fw)?;
        Ok(t.elapsed().as_secs_f64())
    }
}

struct FirewheelAudio {
    processor: FirewheelProcessor,
    frames: u64,
}

impl Audio for FirewheelAudio {
    fn block(&mut self, out: &mut [f32]) {
        let frames = out.len();
        let info = BackendProcessInfo {
            frames,
            // Firewheel reads the clock itself, as Downbeat's engine does.
            process_timestamp: None,
            duration_since_stream_start: Duration::from_nanos(
                self.frames * 1_000_000_000 / RATE as u64,
            ),
            input_stream_status: StreamStatus::empty(),
            output_stream_status: StreamStatus::empty(),
            dropped_frames: 0,
            process_to_playback_delay: None,
        };
        self.frames += frames as u64;
        let silence: [f32; 0] = [];
        // Neither wrapper can fail: an empty input of no channels, and `out` holds exactly
        // `frames` mono frames.
        if let (Ok(input), Ok(mut output)) = (
            InterleavedSlice::new(&silence[..], 0, 0),
            InterleavedSlice::new_mut(out, 1, frames),
        ) {
            self.processor.process(&input, &mut output, info);
        }
    }
}

/// Firewheel on the twin kernels: `size - 2` oscillators into a mix into its graph output.
pub fn system(size: usize) -> Result<Halves, Error> {
    let n = size.saturating_sub(2).max(1);
    // Room for every node and edge, the added one included, and a margin.
    let capacity = u32::try_from(size + 16).map_err(fw)?;
    let mut ctx = FirewheelContext::new(FirewheelConfig {
        num_graph_inputs: ChannelCount::ZERO,
        num_graph_outputs: ChannelCount::MONO,
        initial_node_capacity: capacity,
        initial_edge_capacity: capacity,
        ..FirewheelConfig::default()
    });
    let mix = ctx.add_node(SumNode, None).map_err(fw)?;
    let out = ctx.graph_out_node_id();
    ctx.connect(mix, out, &[(0, 0)], false).map_err(fw)?;
    for i in 0..n {
        let id = ctx
            .add_node(OscNode(Osc::nth(i, n, RATE)), None)
            .map_err(fw)?;
        ctx.connect(id, mix, &[(0, 0)], false).map_err(fw)?;
    }
    let rate = NonZeroU32::new(RATE).ok_or_else(|| fw("zero sample rate"))?;
    let block = NonZeroU32::new(BLOCK as u32).ok_or_else(|| fw("zero block size"))?;
    let processor = ctx
        .activate(ActivateInfo {
            sample_rate: rate,
            max_block_frames: block,
            num_stream_in_channels: 0,
            num_stream_out_channels: 1,
            input_to_output_latency_seconds: 0.0,
        })
        .map_err(fw)?;
    ctx.update().map_err(fw)?;
    Ok((
        Box::new(FirewheelControl {
            ctx,
            mix,
            probe: None,
        }),
        Box::new(FirewheelAudio {
            processor,
            frames: 0,
        }),
    ))
}
