//! Plugin hosting: CLAP, VST3 and LV2 plugins as nodes of a Downbeat graph, and an audit of what a
//! plugin does on the audio thread.
//!
//! Each format sits behind a cargo feature (`clap` and `vst3`, in the default build, and
//! `lv2`), so that the default build needs no system library.

pub mod audit;
#[cfg(feature = "clap")]
pub mod clap;
pub mod crash;
pub mod headless;
#[cfg(any(feature = "clap", feature = "vst3"))]
mod keys;
#[cfg(feature = "lv2")]
pub mod lv2;
pub mod naming;
#[cfg(feature = "vst3")]
pub mod vst3;
