//! The recordings of a run: one [`Recorder`] per file asked for, whose taps the renderer
//! writes to, closed when the run ends, also when it ends in an error.

use crate::record::{Recorded, Recorder, WhenFull};

use super::{DeviceError, InputFile, RecordTo, Renderer, RunLength};
use crate::Engine;

/// A renderer for `engine`, its `input` nodes hearing `input` when given (checked first,
/// so a bad file creates no recording), recording what `record_to` asks for, and the
/// recorders, started now. `when_full` says what the audio thread does when the disk falls
/// behind.
pub(crate) fn prepare(
    engine: Engine,
    length: RunLength,
    record_to: &RecordTo,
    input: Option<&InputFile>,
    when_full: WhenFull,
) -> Result<(Renderer, Takes), DeviceError> {
    let rate = engine.sample_rate();
    let (out_ch, in_ch) = (
        engine.channels(),
        engine.capture().map_or(0, |c| c.channels()),
    );
    if record_to.input.is_some() && in_ch == 0 {
        return Err(DeviceError::Config(
            "--record-input: the project has no `input` node, so there is nothing to record".into(),
        ));
    }
    let mut renderer = Renderer::new(engine, length.frames);
    if let Some(file) = input {
        file.check_for(&renderer)?;
        renderer = renderer.input_file(file);
    }
    let mut takes = Takes {
        recorders: Vec::new(),
    };
    let options = &record_to.options;
    if let Some(path) = &record_to.out {
        let (recorder, tap) = Recorder::start(path, out_ch, rate, options, when_full)?;
        takes.recorders.push(recorder);
        renderer = renderer.record_stream(tap);
    }
    if let Some(path) = &record_to.input {
        let started = Recorder::start(path, in_ch, rate, options, when_full);
        let (recorder, tap) = match started {
            Ok(s) => s,
            Err(e) => {
                // The `--out` writer is stopped before the error goes up.
                drop(renderer);
                let _ = takes.close();
                return Err(e);
            }
        };
        takes.recorders.push(recorder);
        renderer = renderer.record_input_stream(tap);
    }
    Ok((renderer, takes))
}

/// The recorders of a run, kept aside from the renderer so that the files are closed
/// whatever becomes of it.
pub(crate) struct Takes {
    recorders: Vec<Recorder>,
}

impl Takes {
    /// Writes what is queued and closes the files: every one, also after an error in one.
    pub(crate) fn close(self) -> Result<Vec<Recorded>, DeviceError> {
        let mut first_error = None;
        let mut recorded = Vec::new();
        for r in self.recorders {
            match r.finish() {
                Ok(r) => recorded.push(r),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(recorded),
        }
    }

    /// Ends the renderer (and with it the taps), closes the files and hands the engine back.
    pub(crate) fn finish(self, renderer: Renderer) -> Result<(Engine, Vec<Recorded>), DeviceError> {
        let engine = renderer.into_engine();
        Ok((engine, self.close()?))
    }
}
