//! `files` (issue 27): decoding and resampling audio files, against `sox`, `ffmpeg` and
//! `rubato`. One function per case, so streaming cases can be added beside them.

use crate::report::Report;
use crate::Common;

mod decode;

/// Runs the suite.
pub fn run(common: &Common) -> Report {
    let mut report = Report::new("files");
    let dir = decode::make_files(common.quick);
    if common.wants("decode") {
        decode::decode(common, &dir, &mut report);
    }
    if common.wants("resample") {
        decode::resample(common, &dir, &mut report);
    }
    let _ = std::fs::remove_dir_all(&dir);
    report
}
