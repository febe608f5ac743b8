//! The audio a real-time device records during a run: [`Take`](super::Take)s allocated and
//! touched before the run (so the audio thread never allocates or faults to record), paired
//! with the files they go to, and written when the run ends, also when it ends in an error.

use std::path::PathBuf;
use std::sync::Arc;

use super::{DeviceError, RecordTo, Renderer, RunLength, Take, MAX_RECORD_SECONDS};
use crate::Engine;

/// A renderer for `engine` with the takes `record_to` asks for, allocated and touched
/// now. Real-time devices keep takes in memory, so their length is bounded.
pub(crate) fn prepare(
    engine: Engine,
    length: RunLength,
    record_to: &RecordTo,
    device: &str,
) -> Result<Renderer, DeviceError> {
    let rate = engine.sample_rate();
    let wanted = record_to.out.is_some() || record_to.input.is_some();
    if wanted && length.frames as f64 > MAX_RECORD_SECONDS * rate as f64 {
        return Err(DeviceError::Config(format!(
            "the {device} device records at most {MAX_RECORD_SECONDS} s; use `--device offline` \
             to render longer files, or run without `--out`"
        )));
    }
    let (out_ch, in_ch) = (
        engine.channels(),
        engine.capture().map_or(0, |c| c.channels()),
    );
    let mut renderer = Renderer::new(engine, length.frames);
    if record_to.out.is_some() {
        renderer = renderer.record(Take::new(length.frames as usize, out_ch));
    }
    if record_to.input.is_some() {
        if in_ch == 0 {
            return Err(DeviceError::Config(
                "--record-input: the project has no `input` node, so there is nothing to record"
                    .into(),
            ));
        }
        renderer = renderer.record_input(Take::new(length.frames as usize, in_ch));
    }
    Ok(renderer)
}

/// The takes of a run and where they go, kept aside so that they can be written whatever becomes of the
/// renderer.
pub(crate) struct Takes {
    out: Option<(PathBuf, Arc<Take>)>,
    input: Option<(PathBuf, Arc<Take>)>,
}

impl Takes {
    pub(crate) fn of(renderer: &Renderer, record_to: &RecordTo) -> Self {
        let (out, input) = renderer.takes();
        Self {
            out: record_to.out.clone().zip(out),
            input: record_to.input.clone().zip(input),
        }
    }

    /// Writes the WAV files.
    pub(crate) fn write(&self, rate: u32) -> Result<(), DeviceError> {
        for (path, rec) in self.out.iter().chain(&self.input) {
            rec.write_wav(path, rate)?;
        }
        Ok(())
    }

    /// Writes the WAV files and hands the engine back.
    pub(crate) fn finish(&self, renderer: Renderer, rate: u32) -> Result<Engine, DeviceError> {
        self.write(rate)?;
        Ok(renderer.into_engine())
    }
}
