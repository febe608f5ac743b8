//! Downbeat: a real-time audio runtime. This crate holds the [`Engine`], the devices that
//! drive it, project files and live control; the `downbeat` command-line tool is the
//! `downbeat-cli` crate.
#![warn(missing_docs)]

pub mod control;
pub mod device;
pub mod engine;
pub mod load;
pub mod midi;
pub mod project;
pub mod record;
pub mod report;
pub mod swap;
pub mod watch;

pub use engine::Engine;
pub use load::{LoadMeter, LoadSummary};
