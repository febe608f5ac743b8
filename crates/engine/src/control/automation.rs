//! Automation in project files: `[[automation]]` entries that move live parameters at set
//! times, compiled to events at exact frames so that every device renders them alike.
//!
//! ```toml
//! [[automation]]
//! node = "lp"
//! param = "freq"
//! points = [[0.0, 200.0], [2.0, 4000.0, "exp"], [3.0, 800.0, "linear"], [4.5, 300.0]]
//! ```
//!
//! Each point is `[seconds, value]` or `[seconds, value, shape]`:
//!
//! * `"step"` (the default) jumps to the value at that time, unsmoothed;
//! * `"linear"` or `"exp"` (also `"exponential"`) is the *end* of a ramp: the value is
//!   reached at that time, by a ramp that starts at the previous point's time (at 0 for the
//!   first point) from the value the parameter has there.
//!
//! The example holds 200 Hz from the start, sweeps exponentially to 4 kHz over two seconds,
//! comes back linearly to 800 Hz in one, holds it, and jumps to 300 Hz at 4.5 s.
//!
//! A time is at frame `round(seconds × sample_rate)` of the run (at the project's sample
//! rate, or the one a device imposes). With `time = "beats"` an entry's times are the song's
//! quarter-note beats instead (see the project's `[tempo]`): each point takes effect when
//! the playing song reaches its beat, on that beat's frame, so a loop plays the curve again
//! and a stopped song holds it; a ramp lasts the frames between its two beats. Times go strictly up within an entry; values are
//! checked against the parameter's range, and an exponential ramp needs a start and an end
//! of the same sign, neither 0 (as Web Audio's `exponentialRampToValueAtTime`).
//!
//! The events sit in the schedule's preloaded timeline
//! ([`Schedule::set_timeline`](downbeat_graph::Schedule::set_timeline)), which holds any
//! number without taking room in the live queue; live events (a controller, OSC) at the
//! same frame come after them. A `--replay` replaces the timeline: a recording already holds
//! the automation events the recorded run applied.

use std::ops::Range;

use downbeat_graph::time::TempoMap;
use downbeat_graph::{Change, ControlError, Event, OnBeat, ParamTable, Ramp, Shape};
use serde::Deserialize;
use toml::Spanned;

/// How a point reaches its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointShape {
    /// Jumps to the value at the point's time.
    Step,
    /// Ends a ramp of this shape from the previous point.
    Ramp(Shape),
}

/// What an entry's times count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds from the start of the run (the default): frames of the engine's timeline.
    #[default]
    Seconds,
    /// Quarter-note beats of the song (`time = "beats"`): each point takes effect whenever
    /// the playing song reaches its beat, on that beat's frame, so a loop plays it again.
    Beats,
}

/// One point of an automation curve.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// When: seconds from the start of the run, or the song's beat (see [`TimeUnit`]).
    pub at: f64,
    /// The value reached then.
    pub value: f64,
    /// How it is reached.
    pub shape: PointShape,
    span: Range<usize>,
    value_span: Range<usize>,
}

/// One `[[automation]]` entry: a curve for one live parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Automation {
    /// The node's name.
    pub node: String,
    /// The parameter's name.
    pub param: String,
    /// The points, in time order.
    pub points: Vec<Point>,
    /// What the points' times count.
    pub unit: TimeUnit,
    node_span: Range<usize>,
    param_span: Range<usize>,
}

/// An `[[automation]]` entry as written (deserialized with the project).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAutomation {
    node: Spanned<String>,
    param: Spanned<String>,
    points: Spanned<Vec<Spanned<Vec<Spanned<toml::Value>>>>>,
    time: Option<Spanned<String>>,
}

/// A problem in an automation entry: where in the project text, what, and what would do.
#[derive(Debug)]
pub(crate) struct Located {
    pub(crate) span: Range<usize>,
    pub(crate) message: String,
    pub(crate) help: Option<String>,
}

fn located(span: Range<usize>, message: impl Into<String>, help: &str) -> Located {
    Located {
        span,
        message: message.into(),
        help: Some(help.to_string()),
    }
}

const POINT_HELP: &str = "a point is [seconds, value] or [seconds, value, \"linear\" | \"exp\" | \
                          \"step\"], e.g. points = [[0.0, 200.0], [2.0, 4000.0, \"exp\"]]";

fn number(v: &Spanned<toml::Value>) -> Option<f64> {
    match v.get_ref() {
        toml::Value::Float(x) => Some(*x),
        toml::Value::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

/// Checks the shape of every entry (node and parameter names are checked against the built
/// schedule by [`events`]).
pub(crate) fn parse(raw: Vec<RawAutomation>) -> Result<Vec<Automation>, Located> {
    raw.into_iter().map(parse_one).collect()
}

fn parse_one(raw: RawAutomation) -> Result<Automation, Located> {
    let unit = match &raw.time {
        None => TimeUnit::Seconds,
        Some(t) if t.get_ref() == "seconds" => TimeUnit::Seconds,
        Some(t) if t.get_ref() == "beats" => TimeUnit::Beats,
        Some(t) => {
            return Err(located(
                t.span(),
                format!("unknown automation time `{}`", t.get_ref()),
                "`time` is \"seconds\" (the default) or \"beats\" (the song's quarter notes)",
            ))
        }
    };
    let what = match unit {
        TimeUnit::Seconds => "a number of seconds",
        TimeUnit::Beats => "a number of beats",
    };
    let points_span = raw.points.span();
    let list = raw.points.into_inner();
    if list.is_empty() {
        return Err(located(points_span, "automation has no points", POINT_HELP));
    }
    let mut points = Vec::with_capacity(list.len());
    let mut last: Option<f64> = None;
    for point in list {
        let span = point.span();
        let items = point.into_inner();
        if !(2..=3).contains(&items.len()) {
            return Err(located(
                span,
                format!("an automation point has {} items", items.len()),
                POINT_HELP,
            ));
        }
        let at = number(&items[0])
            .filter(|s| s.is_finite() && *s >= 0.0)
            .ok_or_else(|| {
                located(
                    items[0].span(),
                    format!("the time of an automation point must be {what}, 0 or more"),
                    POINT_HELP,
                )
            })?;
        if let Some(prev) = last.filter(|&p| at <= p) {
            return Err(located(
                items[0].span(),
                match unit {
                    TimeUnit::Seconds => {
                        format!("automation times must go up: {at} s comes after {prev} s")
                    }
                    TimeUnit::Beats => {
                        format!("automation times must go up: beat {at} comes after beat {prev}")
                    }
                },
                "list the points of an entry in time order, each later than the one before",
            ));
        }
        last = Some(at);
        let value = number(&items[1]).ok_or_else(|| {
            located(
                items[1].span(),
                "the value of an automation point must be a number",
                POINT_HELP,
            )
        })?;
        let shape = match items.get(2).map(|s| (s, s.get_ref())) {
            None => PointShape::Step,
            Some((_, toml::Value::String(s))) if s == "step" => PointShape::Step,
            Some((_, toml::Value::String(s))) if s == "linear" => PointShape::Ramp(Shape::Linear),
            Some((_, toml::Value::String(s))) if s == "exp" || s == "exponential" => {
                PointShape::Ramp(Shape::Exponential)
            }
            Some((s, _)) => {
                return Err(located(
                    s.span(),
                    "unknown automation shape",
                    "the shape is \"step\" (the default), \"linear\" or \"exp\"",
                ))
            }
        };
        points.push(Point {
            at,
            value,
            shape,
            span,
            value_span: items[1].span(),
        });
    }
    Ok(Automation {
        node: raw.node.get_ref().clone(),
        param: raw.param.get_ref().clone(),
        points,
        unit,
        node_span: raw.node.span(),
        param_span: raw.param.span(),
    })
}

fn control(span: Range<usize>, e: &ControlError) -> Located {
    Located {
        span,
        message: format!("automation: {}", e.message()),
        help: e.help(),
    }
}

/// The frame of `seconds` at `rate`: `round(seconds × rate)`.
pub fn frame_of(seconds: f64, rate: u32) -> u64 {
    (seconds * f64::from(rate)).round() as u64
}

/// The events of every entry against a schedule's parameters, in entry order then time
/// order (a ramp's event sits at the frame where the ramp starts); entries in beats become
/// events timed by beats, their ramps as long as `song` makes them.
pub(crate) fn events(
    list: &[Automation],
    table: &ParamTable,
    song: &TempoMap,
) -> Result<Vec<Event>, Located> {
    let rate = table.sample_rate();
    let mut events = Vec::new();
    for a in list {
        let id = table.resolve(&a.node, &a.param).map_err(|e| {
            let span = match e {
                ControlError::UnknownNode { .. } => a.node_span.clone(),
                _ => a.param_span.clone(),
            };
            control(span, &e)
        })?;
        let (mut start, mut before) = (0u64, f64::from(table.initial(id)));
        let mut start_beat = 0.0;
        for p in &a.points {
            let frame = match a.unit {
                TimeUnit::Seconds => frame_of(p.at, rate),
                TimeUnit::Beats => song.frame_of(p.at),
            };
            let to = p.value as f32;
            let (at, at_beat, change) = match p.shape {
                PointShape::Step => (frame, p.at, Change::Step(to)),
                PointShape::Ramp(shape) => {
                    let frames = u32::try_from(frame - start).map_err(|_| {
                        located(
                            p.span.clone(),
                            format!("a ramp to {} is too long", p.at),
                            "ramps last at most 2^32 - 1 frames (about a day at 48 kHz)",
                        )
                    })?;
                    if shape == Shape::Exponential && (before * p.value <= 0.0) {
                        let (node, name) = (a.node.clone(), a.param.clone());
                        let e = ControlError::BadExponential {
                            node,
                            name,
                            value: p.value,
                        };
                        return Err(control(p.value_span.clone(), &e));
                    }
                    let ramp = Ramp {
                        shape,
                        from: None,
                        to,
                        frames,
                    };
                    (start, start_beat, Change::Ramp(ramp))
                }
            };
            table
                .check(id, &change)
                .map_err(|e| control(p.value_span.clone(), &e))?;
            events.push(match a.unit {
                TimeUnit::Seconds => Event::param(Some(at), id, change),
                TimeUnit::Beats => Event::param(None, id, change).on_beat(OnBeat::Beat(at_beat)),
            });
            (start, before, start_beat) = (frame, p.value, p.at);
        }
    }
    Ok(events)
}
