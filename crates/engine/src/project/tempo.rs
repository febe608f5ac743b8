//! A project's `[tempo]` and `[transport]` tables: the song's tempo map, and how its
//! transport starts.
//!
//! ```toml
//! [tempo]
//! bpm = 120                                   # from beat 0
//! signature = "4/4"                           # the default
//! changes = [
//!     { beat = 32, bpm = 140 },               # a step at beat 32
//!     { beat = 64, bpm = 90, ramp = 8 },      # from beat 64, linear over 8 beats to 90 bpm
//!     { beat = 96, signature = "3/4" },       # on a bar line
//! ]
//!
//! [transport]
//! playing = true                              # the default
//! loop = [0, 16]                              # beats; none by default
//! ```
//!
//! Beats are quarter notes counted from 0. Without a `[tempo]` table the song runs at 120
//! bpm in 4/4.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use downbeat_graph::time::{
    Signature, SignatureChange, TempoError, TempoMap, TempoPoint, Transport, TransportCommand,
};

/// The `[tempo]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTempo {
    bpm: Option<Spanned<f64>>,
    signature: Option<Spanned<String>>,
    #[serde(default)]
    changes: Vec<Spanned<RawChange>>,
}

/// One entry of `changes`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChange {
    beat: f64,
    bpm: Option<f64>,
    ramp: Option<f64>,
    signature: Option<String>,
}

/// The `[transport]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTransport {
    playing: Option<bool>,
    #[serde(rename = "loop")]
    looping: Option<Spanned<Vec<f64>>>,
}

/// How the song's transport starts: [`Project::transport`](crate::project::Project::transport).
#[derive(Clone, Debug, PartialEq)]
pub struct TransportSetup {
    /// Whether it plays from the first block (it does unless the project says otherwise).
    pub playing: bool,
    /// The loop, in beats, if any.
    pub looping: Option<(f64, f64)>,
}

impl Default for TransportSetup {
    fn default() -> Self {
        Self {
            playing: true,
            looping: None,
        }
    }
}

/// An error in one of the tables: what, and the span to point at.
pub(crate) struct TableError {
    pub(crate) span: Range<usize>,
    pub(crate) message: String,
    pub(crate) help: &'static str,
}

const TEMPO_HELP: &str = "`[tempo]` takes `bpm` (above 0, at most 999), `signature` (\"n/d\", d a power of two) and `changes = [{ beat = B, bpm = T, ramp = R }, { beat = B, signature = \"3/4\" }]`";

/// The map `raw` declares at `sample_rate`; `table` is the span of the whole table.
pub(crate) fn map(raw: &Spanned<RawTempo>, sample_rate: u32) -> Result<TempoMap, TableError> {
    let err = |span: Range<usize>, message: String| TableError {
        span,
        message: format!("[tempo]: {message}"),
        help: TEMPO_HELP,
    };
    let t = raw.get_ref();
    let signature = match &t.signature {
        Some(s) => s
            .get_ref()
            .parse::<Signature>()
            .map_err(|e| err(s.span(), e.to_string()))?,
        None => Signature::default(),
    };
    let mut points = Vec::new();
    let mut point_spans = Vec::new();
    let mut signatures = Vec::new();
    let mut signature_spans = Vec::new();
    for change in &t.changes {
        let c = change.get_ref();
        match (c.bpm, &c.signature) {
            (None, None) => {
                return Err(err(
                    change.span(),
                    format!(
                        "the change at beat {} changes neither `bpm` nor `signature`",
                        c.beat
                    ),
                ))
            }
            (None, Some(_)) if c.ramp.is_some() => {
                return Err(err(
                    change.span(),
                    format!(
                        "the change at beat {} has a `ramp` but no `bpm` to ramp to",
                        c.beat
                    ),
                ))
            }
            _ => {}
        }
        if let Some(bpm) = c.bpm {
            points.push(TempoPoint {
                beat: c.beat,
                bpm,
                ramp: c.ramp.unwrap_or(0.0),
            });
            point_spans.push(change.span());
        }
        if let Some(text) = &c.signature {
            let signature = text
                .parse::<Signature>()
                .map_err(|e| err(change.span(), e.to_string()))?;
            signatures.push(SignatureChange {
                beat: c.beat,
                signature,
            });
            signature_spans.push(change.span());
        }
    }
    let bpm = t.bpm.as_ref().map_or(120.0, |b| *b.get_ref());
    TempoMap::new(bpm, signature, &points, &signatures, sample_rate).map_err(|e| {
        let span = match &e {
            TempoError::InitialBpm(_) => t.bpm.as_ref().map(Spanned::span),
            TempoError::PointBeat { index, .. }
            | TempoError::PointBpm { index, .. }
            | TempoError::Ramp { index, .. }
            | TempoError::DuplicatePoint { other: index, .. }
            | TempoError::Overlap { index, .. } => point_spans.get(*index).cloned(),
            TempoError::SignatureBeat { index, .. }
            | TempoError::OffBar { index, .. }
            | TempoError::DuplicateSignature { other: index, .. } => {
                signature_spans.get(*index).cloned()
            }
            _ => None,
        };
        err(span.unwrap_or_else(|| raw.span()), e.to_string())
    })
}

/// The setup `raw` declares, its loop checked against `map`.
pub(crate) fn transport(
    raw: &Spanned<RawTransport>,
    map: &TempoMap,
) -> Result<TransportSetup, TableError> {
    let t = raw.get_ref();
    let looping = match &t.looping {
        None => None,
        Some(l) => {
            // The transport's own rule, so that building never meets a loop it refuses.
            let checked = match l.get_ref().as_slice() {
                &[start, end] => Transport::new(map.clone())
                    .apply(TransportCommand::Loop(start, end))
                    .map(|()| (start, end))
                    .map_err(|e| e.to_string()),
                other => Err(format!("{} numbers where two beats belong", other.len())),
            };
            Some(checked.map_err(|why| TableError {
                span: l.span(),
                message: format!("[transport]: loop {:?}: {why}", l.get_ref()),
                help: "write the loop as `loop = [START, END]` in quarter-note beats, e.g. `loop = [0, 16]` for four bars of 4/4",
            })?)
        }
    };
    Ok(TransportSetup {
        playing: t.playing.unwrap_or(true),
        looping,
    })
}
