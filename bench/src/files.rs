//! `files` (issue 27): decoding and resampling audio files, against `sox`, `ffmpeg` and
//! `rubato`; streaming from disk against `creek` (cases `streams`, `seek`, `disk_load`).

use crate::report::Report;
use crate::Common;

mod decode;
mod quality;
mod stream;

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
    if common.wants("streams") {
        stream::streams(common, &mut report);
    }
    if common.wants("seek") {
        stream::seek(common, &mut report);
    }
    if common.wants("disk_load") {
        stream::disk_load(common, &mut report);
    }
    report
}
