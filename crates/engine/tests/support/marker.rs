//! A test instrument that writes each note-on's note number at the note's frame, so that a
//! test sees every onset exactly: `type = "marker"`, one input (ignored) and one output.

use std::sync::Once;

use downbeat::register_node_type;
use downbeat_graph::{
    AudioMut, AudioRef, Node, NodeConfig, NodeFactory, NoteError, NoteEvent, ParamError, ParamSpec,
    ParamValue, Params, ProcessContext,
};

/// Registers the `marker` node type (once per test binary).
pub fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| register_node_type(MarkerType).unwrap());
}

struct MarkerType;

impl NodeFactory for MarkerType {
    fn name(&self) -> &str {
        "marker"
    }
    fn doc(&self) -> &str {
        "writes each note-on's note number at its frame (tests)"
    }
    fn params(&self) -> &[ParamSpec] {
        &[]
    }
    fn create(
        &self,
        params: Vec<(String, ParamValue)>,
        _: &NodeConfig,
    ) -> Result<Box<dyn Node>, ParamError> {
        Params::validate(&[], params)?;
        Ok(Box::new(Marker { pending: 0.0 }))
    }
}

struct Marker {
    /// The sum of the note numbers of the notes that start at the next frame processed.
    pending: f32,
}

impl Node for Marker {
    fn input_channels(&self) -> usize {
        1
    }
    fn output_channels(&self) -> usize {
        1
    }
    fn process(&mut self, ctx: &ProcessContext, _: AudioRef<'_>, mut out: AudioMut<'_>) {
        let out = out.channel_mut(0);
        out[..ctx.frames].fill(0.0);
        out[0] = std::mem::take(&mut self.pending);
    }
    fn plays_notes(&self) -> bool {
        true
    }
    fn note(&mut self, _frame: usize, event: NoteEvent) -> Result<(), NoteError> {
        // The schedule cuts the block at the note's frame: the next process call starts there.
        if let NoteEvent::On { note, .. } = event {
            self.pending += note;
        }
        Ok(())
    }
}
