//! The real-time case: the most `voices` each engine plays on a JACK dummy server without
//! an xrun.

use super::{EnginesArgs, EnginesError, Setup};
use crate::report::Report;

pub(super) fn run(_args: &EnginesArgs, _s: &Setup, _report: &mut Report) -> Result<(), EnginesError> {
    Ok(())
}
