//! The built-in DSP nodes.

mod gain;
mod output;

pub use gain::Gain;
pub use output::Output;

use crate::param::{ParamKind, ParamSpec};
use crate::registry::NodeType;

/// The `channels` parameter most node types share.
pub(crate) const CHANNELS: ParamSpec = ParamSpec {
    name: "channels",
    doc: "number of audio channels of the node's ports",
    kind: ParamKind::Int {
        min: 1,
        max: 32,
        default: 2,
    },
};

pub(crate) static BUILTIN: &[NodeType] = &[gain::TYPE, output::TYPE];
