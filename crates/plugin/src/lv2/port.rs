//! What a plugin's ports are, and what its control inputs accept.
//!
//! The rules here are the LV2 specification's port properties, as a host must honour them so
//! that a value typed in another host means the same in Downbeat:
//!
//! * `lv2:sampleRate`: the port's minimum, maximum and default are fractions of the sample
//!   rate; the value itself is in Hz. A range of 0 to 0.5 at 48 kHz accepts 0 to 24000.
//! * `lv2:integer`: only whole numbers; a live value is rounded.
//! * `lv2:toggled`: off (0) or on (1); any value above 0 is on.
//! * `lv2:enumeration`: only the values of the port's scale points (by number, or by label in
//!   a project file); a live value snaps to the nearest of them.
//! * `lv2:connectionOptional`: the port may be left unconnected. Downbeat connects every
//!   port it can feed, and leaves unconnected only optional ports of a type it cannot feed;
//!   such a port without the property refuses the plugin at load time.

use super::error::Lv2Error;

/// What a port carries, in which direction: how the node connects it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortKind {
    /// An audio input: one input channel of the node, in port order.
    AudioIn,
    /// An audio output: one output channel of the node, in port order.
    AudioOut,
    /// A control input: a live parameter named by the port's symbol.
    ControlIn,
    /// A control output (a meter, the latency port, a delay time): written by the plugin,
    /// one of the node's outputs ([`Node::outputs`](downbeat_graph::Node::outputs)), named
    /// by its symbol.
    ControlOut,
    /// An atom sequence input; `midi` when it accepts MIDI events, and then it receives the
    /// node's notes; `time` when it accepts `time:Position`, and then it receives the host's
    /// transport (see [`time`](super::time)).
    AtomIn {
        /// Whether the port supports `midi:MidiEvent`.
        midi: bool,
        /// Whether the port supports `time:Position`.
        time: bool,
    },
    /// An atom sequence output, given an empty chunk to write into on every call.
    AtomOut,
    /// A CV input, fed silence.
    CvIn,
    /// A CV output, written into a scratch buffer.
    CvOut,
    /// Anything else (an event port of the deprecated event extension, an unknown class).
    Other,
}

/// How the node connects one port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connection {
    /// To a buffer the node owns or hands through (audio, control, atom, CV).
    Buffer,
    /// Left unconnected (null), which only `lv2:connectionOptional` allows.
    Unconnected,
}

/// Decides how a port is connected: every kind Downbeat can feed gets a buffer, optional
/// or not; a port of another kind is left unconnected when the plugin allows it
/// (`lv2:connectionOptional`), and otherwise refuses the plugin, naming the port.
///
/// ```
/// use downbeat_plugin::lv2::port::{connection, Connection, PortKind};
///
/// assert_eq!(connection(PortKind::CvIn, false, "cv", &[]), Ok(Connection::Buffer));
/// assert_eq!(connection(PortKind::Other, true, "ev", &[]), Ok(Connection::Unconnected));
/// assert!(connection(PortKind::Other, false, "ev", &[]).is_err());
/// ```
///
/// # Errors
/// [`Lv2Error::UnsupportedPort`] for a required port of a kind Downbeat cannot feed.
pub fn connection(
    kind: PortKind,
    optional: bool,
    symbol: &str,
    classes: &[String],
) -> Result<Connection, Lv2Error> {
    match (kind, optional) {
        (PortKind::Other, true) => Ok(Connection::Unconnected),
        (PortKind::Other, false) => Err(Lv2Error::UnsupportedPort {
            uri: String::new(),
            symbol: symbol.to_string(),
            classes: classes.to_vec(),
        }),
        _ => Ok(Connection::Buffer),
    }
}

/// The port properties that change what a control input accepts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ControlProps {
    /// `lv2:sampleRate`: bounds and default are fractions of the sample rate.
    pub sample_rate: bool,
    /// `lv2:integer`.
    pub integer: bool,
    /// `lv2:toggled`.
    pub toggled: bool,
    /// `lv2:enumeration`.
    pub enumeration: bool,
}

/// One control input as the user sees it: in the units typed into a project file.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlSpec {
    /// The port's symbol: the parameter's name.
    pub symbol: String,
    /// The port's human name.
    pub name: String,
    /// Smallest accepted value (already scaled by the sample rate for `lv2:sampleRate`).
    pub min: f32,
    /// Largest accepted value.
    pub max: f32,
    /// The value when none is given.
    pub default: f32,
    /// The port properties.
    pub props: ControlProps,
    /// The port's scale points, `(value, label)`; with `lv2:enumeration` the only values
    /// accepted.
    pub points: Vec<(f32, String)>,
}

impl ControlSpec {
    /// Builds the spec from what the plugin's data says, at `sample_rate`. Missing bounds
    /// are unbounded (0 to 1 for a toggle); a missing default is the value nearest 0 that
    /// the port accepts.
    ///
    /// ```
    /// use downbeat_plugin::lv2::port::{ControlProps, ControlSpec};
    ///
    /// // A cutoff declared as 0.01 to 0.5 of the sample rate, default 0.1.
    /// let props = ControlProps { sample_rate: true, ..ControlProps::default() };
    /// let cutoff = ControlSpec::new("cutoff", "Cutoff", Some(0.01), Some(0.5), Some(0.1),
    ///     props, Vec::new(), 48000);
    /// assert_eq!((cutoff.min, cutoff.max, cutoff.default), (480.0, 24000.0, 4800.0));
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        symbol: &str,
        name: &str,
        min: Option<f32>,
        max: Option<f32>,
        default: Option<f32>,
        props: ControlProps,
        mut points: Vec<(f32, String)>,
        sample_rate: u32,
    ) -> Self {
        // LV2 gives such bounds as fractions of the rate, a float by the spec.
        let scale = if props.sample_rate {
            sample_rate as f32
        } else {
            1.0
        };
        let (lo, hi) = if props.toggled {
            (0.0, 1.0)
        } else {
            (f32::MIN, f32::MAX)
        };
        let min = min.map_or(lo, |v| v * scale);
        let max = max.map_or(hi, |v| v * scale).max(min);
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut spec = ControlSpec {
            symbol: symbol.to_string(),
            name: name.to_string(),
            min,
            max,
            default: 0.0,
            props,
            points,
        };
        spec.default = spec.coerce(default.map_or(0.0, |v| v * scale));
        spec
    }

    /// Whether the value is restricted to the scale points.
    pub fn is_enumeration(&self) -> bool {
        self.props.enumeration && !self.points.is_empty()
    }

    /// Checks a number given in a project file and returns the value the port gets.
    ///
    /// ```
    /// use downbeat_plugin::lv2::port::{ControlProps, ControlSpec};
    ///
    /// let props = ControlProps { integer: true, ..ControlProps::default() };
    /// let taps = ControlSpec::new("taps", "Taps", Some(1.0), Some(8.0), Some(1.0), props,
    ///     Vec::new(), 48000);
    /// assert_eq!(taps.accept(3.0), Ok(3.0));
    /// assert!(taps.accept(2.5).is_err());
    /// assert!(taps.accept(9.0).is_err());
    /// ```
    ///
    /// # Errors
    /// [`Lv2Error::BadValue`] for a value out of range, a fraction on an integer port, a
    /// value other than 0 or 1 on a toggle, or a value that is not one of an enumeration's
    /// scale points; the message says what is accepted.
    pub fn accept(&self, value: f64) -> Result<f32, Lv2Error> {
        let bad = |message: String| Lv2Error::BadValue {
            symbol: self.symbol.clone(),
            message,
        };
        if !value.is_finite() {
            return Err(bad(format!("{value} is not a number")));
        }
        if self.is_enumeration() {
            return self
                .points
                .iter()
                .find(|(v, _)| (f64::from(*v) - value).abs() <= 1e-6 * value.abs().max(1.0))
                .map(|(v, _)| *v)
                .ok_or_else(|| bad(format!("{value} is not one of {}", self.describe_points())));
        }
        if self.props.toggled {
            return match value {
                0.0 => Ok(0.0),
                1.0 => Ok(1.0),
                _ => Err(bad(format!(
                    "{value} is not a toggle value: use 0 or 1 (or false or true)"
                ))),
            };
        }
        if self.props.integer && value.fract() != 0.0 {
            return Err(bad(format!("{value} is not a whole number")));
        }
        if value < f64::from(self.min) || value > f64::from(self.max) {
            return Err(bad(format!(
                "{value} is outside {} to {}",
                self.min, self.max
            )));
        }
        Ok(value as f32)
    }

    /// Checks a scale point's label given in a project file (`mode = "Lim"`).
    ///
    /// # Errors
    /// [`Lv2Error::BadValue`] when no scale point has that label.
    pub fn accept_label(&self, label: &str) -> Result<f32, Lv2Error> {
        self.points
            .iter()
            .find(|(_, l)| l == label)
            .map(|(v, _)| *v)
            .ok_or_else(|| Lv2Error::BadValue {
                symbol: self.symbol.clone(),
                message: if self.points.is_empty() {
                    format!("\"{label}\" is not a number, and the port has no named values")
                } else {
                    format!("\"{label}\" is not one of {}", self.describe_points())
                },
            })
    }

    /// The value the port gets when a live parameter asks for `value` (the schedule's
    /// smoothing passes through values in between): clamped to the range, then rounded
    /// for an integer, 0 or 1 for a toggle, the nearest scale point for an enumeration.
    /// Real-time safe.
    pub fn coerce(&self, value: f32) -> f32 {
        if self.is_enumeration() {
            let mut best = self.points[0].0;
            for &(v, _) in &self.points {
                if (v - value).abs() < (best - value).abs() {
                    best = v;
                }
            }
            return best;
        }
        if self.props.toggled {
            return if value > 0.0 { 1.0 } else { 0.0 };
        }
        let v = value.clamp(self.min, self.max);
        if self.props.integer {
            v.round().clamp(self.min.ceil(), self.max.floor())
        } else {
            v
        }
    }

    /// The scale points as `0 ("Off"), 1 ("On")`.
    pub fn describe_points(&self) -> String {
        self.points
            .iter()
            .map(|(v, l)| format!("{v} (\"{l}\")"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One line for `downbeat nodes` and error messages.
    pub fn describe(&self) -> String {
        let mut s = format!("{}: ", self.name);
        if self.is_enumeration() {
            s += &format!("one of {}", self.describe_points());
        } else if self.props.toggled {
            s += "0 or 1";
        } else {
            s += &format!(
                "{} from {} to {}",
                if self.props.integer {
                    "an integer"
                } else {
                    "a number"
                },
                self.min,
                self.max
            );
        }
        s + &format!(", default {}", self.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(props: ControlProps, points: Vec<(f32, String)>) -> ControlSpec {
        ControlSpec::new(
            "x",
            "X",
            Some(0.0),
            Some(4.0),
            Some(1.0),
            props,
            points,
            48000,
        )
    }

    #[test]
    fn sample_rate_scales_bounds_and_default_not_values() {
        let props = ControlProps {
            sample_rate: true,
            ..ControlProps::default()
        };
        let s = ControlSpec::new(
            "f",
            "F",
            Some(0.0),
            Some(0.5),
            Some(0.25),
            props,
            vec![],
            44100,
        );
        assert_eq!((s.min, s.max, s.default), (0.0, 22050.0, 11025.0));
        assert_eq!(s.accept(20000.0), Ok(20000.0));
        assert!(s.accept(0.6 * 44100.0).is_err());
        let plain = ControlSpec::new(
            "f",
            "F",
            Some(0.0),
            Some(0.5),
            Some(0.25),
            ControlProps::default(),
            vec![],
            44100,
        );
        assert_eq!(plain.max, 0.5);
    }

    #[test]
    fn integer_toggle_and_enumeration() {
        let int = spec(
            ControlProps {
                integer: true,
                ..ControlProps::default()
            },
            vec![],
        );
        assert!(int.accept(1.5).is_err());
        assert_eq!(int.coerce(1.6), 2.0);
        assert_eq!(int.coerce(9.0), 4.0);

        let toggle = spec(
            ControlProps {
                toggled: true,
                ..ControlProps::default()
            },
            vec![],
        );
        assert_eq!(toggle.accept(1.0), Ok(1.0));
        assert!(toggle.accept(0.5).is_err());
        assert_eq!(toggle.coerce(0.01), 1.0);
        assert_eq!(toggle.coerce(0.0), 0.0);

        let points = vec![(0.0, "Off".to_string()), (2.0, "Two".to_string())];
        let en = spec(
            ControlProps {
                enumeration: true,
                ..ControlProps::default()
            },
            points.clone(),
        );
        assert_eq!(en.accept(2.0), Ok(2.0));
        let err = en.accept(1.0).unwrap_err().to_string();
        assert!(err.contains("not one of 0 (\"Off\"), 2 (\"Two\")"), "{err}");
        assert_eq!(en.accept_label("Two"), Ok(2.0));
        assert!(en.accept_label("Three").is_err());
        assert_eq!(en.coerce(1.2), 2.0);
        // Scale points without lv2:enumeration are only names for values.
        let named = spec(ControlProps::default(), points);
        assert_eq!(named.accept(1.0), Ok(1.0));
    }

    #[test]
    fn optional_ports_of_unknown_kind_stay_unconnected() {
        assert_eq!(
            connection(PortKind::Other, true, "e", &[]),
            Ok(Connection::Unconnected)
        );
        assert!(matches!(
            connection(PortKind::Other, false, "e", &[]),
            Err(Lv2Error::UnsupportedPort { .. })
        ));
        assert_eq!(
            connection(
                PortKind::AtomIn {
                    midi: false,
                    time: false
                },
                true,
                "a",
                &[]
            ),
            Ok(Connection::Buffer)
        );
    }
}
