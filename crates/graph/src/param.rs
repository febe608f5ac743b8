//! Typed node parameters: their declarations, the values a user gives, and validation.

use crate::smooth::ParamCurve;
use std::fmt;

/// The type, range and default of one parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamKind {
    /// A real number in `min..=max`.
    Float {
        /// Smallest accepted value.
        min: f64,
        /// Largest accepted value.
        max: f64,
        /// Value when the parameter is not given.
        default: f64,
    },
    /// An integer in `min..=max`.
    Int {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
        /// Value when the parameter is not given.
        default: i64,
    },
    /// `true` or `false`.
    Bool {
        /// Value when the parameter is not given.
        default: bool,
    },
    /// One of a fixed set of words.
    Choice {
        /// Accepted words.
        options: &'static [&'static str],
        /// Value when the parameter is not given.
        default: &'static str,
    },
    /// A list of real numbers, each in `min..=max`, at least one.
    FloatList {
        /// Smallest accepted element.
        min: f64,
        /// Largest accepted element.
        max: f64,
        /// Value when the parameter is not given.
        default: &'static [f64],
    },
    /// The path of a file, given as a string. A project file's relative paths are resolved
    /// against the folder the project file is in when it is loaded, so a node always gets a
    /// path it can open from any working directory. Never live.
    Path {
        /// Value when the parameter is not given; `""` means the parameter must be given.
        default: &'static str,
    },
    /// A table of names to file paths, e.g. note numbers to samples
    /// (`{ 36 = "kick.wav", 38 = "snare.wav" }`); what the names may be is the node type's
    /// to check. Relative paths are resolved like [`Path`](ParamKind::Path)'s. Never live;
    /// when not given it is empty.
    PathMap,
}

impl ParamKind {
    /// A short description of what is accepted, for error messages and docs.
    pub fn describe(&self) -> String {
        match self {
            ParamKind::Float { min, max, .. } => format!("a number from {min} to {max}"),
            ParamKind::Int { min, max, .. } => format!("an integer from {min} to {max}"),
            ParamKind::Bool { .. } => "true or false".to_string(),
            ParamKind::Choice { options, .. } => format!("one of {}", quoted_list(options)),
            ParamKind::FloatList { min, max, .. } => {
                format!("a non-empty list of numbers from {min} to {max}")
            }
            ParamKind::Path { .. } => "the path of a file".to_string(),
            ParamKind::PathMap => "a table of names to file paths".to_string(),
        }
    }

    /// The default value.
    pub fn default_value(&self) -> ParamValue {
        match *self {
            ParamKind::Float { default, .. } => ParamValue::Float(default),
            ParamKind::Int { default, .. } => ParamValue::Int(default),
            ParamKind::Bool { default } => ParamValue::Bool(default),
            ParamKind::Choice { default, .. } => ParamValue::Text(default.to_string()),
            ParamKind::FloatList { default, .. } => ParamValue::List(default.to_vec()),
            ParamKind::Path { default } => ParamValue::Text(default.to_string()),
            ParamKind::PathMap => ParamValue::Map(Vec::new()),
        }
    }
}

/// The unit a parameter's value is in, for the reference documentation (`downbeat nodes`)
/// and for anything that shows a value to a person. It changes nothing about validation:
/// the value is the number the [`ParamKind`] accepts, in this unit.
///
/// ```
/// use downbeat_graph::Unit;
/// use downbeat_nodes::node_type;
/// let sine = node_type("sine").unwrap();
/// let freq = sine.params.iter().find(|p| p.name == "freq").unwrap();
/// assert_eq!(freq.unit, Unit::Hz);
/// assert_eq!(freq.unit.symbol(), "Hz");
/// assert_eq!(Unit::None.symbol(), "");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Unit {
    /// No unit: a count, a ratio, a linear gain, a switch, a word or a path.
    #[default]
    None,
    /// Hertz: a frequency.
    Hz,
    /// Seconds.
    Seconds,
    /// Milliseconds.
    Milliseconds,
    /// Decibels: a level or a gain on a logarithmic scale (0 dB is unity, or full scale
    /// for a level).
    Decibels,
    /// Semitones: a pitch interval.
    Semitones,
    /// Octaves: a pitch interval or a ratio of frequencies, logarithmic.
    Octaves,
    /// A MIDI note number: 60 is middle C, 69 is A4 = 440 Hz; fractions are between notes.
    Note,
    /// Samples (frames) at the node's sample rate.
    Samples,
    /// Cycles of a waveform: 1 is a whole period.
    Cycles,
}

impl Unit {
    /// The unit's short symbol as written after a value (`"Hz"`, `"s"`, `"ms"`, `"dB"`),
    /// `""` for [`Unit::None`].
    pub fn symbol(&self) -> &'static str {
        match self {
            Unit::None => "",
            Unit::Hz => "Hz",
            Unit::Seconds => "s",
            Unit::Milliseconds => "ms",
            Unit::Decibels => "dB",
            Unit::Semitones => "st",
            Unit::Octaves => "oct",
            Unit::Note => "note",
            Unit::Samples => "samples",
            Unit::Cycles => "cycles",
        }
    }
}

/// Declaration of one parameter of a node type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamSpec {
    /// Name used in project files.
    pub name: &'static str,
    /// One line for the reference documentation.
    pub doc: &'static str,
    /// Type, range and default.
    pub kind: ParamKind,
    /// The unit the value is in ([`Unit::None`] for a count, a ratio, a linear gain or
    /// anything that is not a number).
    pub unit: Unit,
    /// Whether the parameter can change while the graph runs (through
    /// [`Node::set_param`](crate::Node::set_param), a controller or automation). Only
    /// `Float` parameters can be live; every live parameter is smoothed by the schedule.
    pub live: bool,
}

/// A parameter value, as given by a user or filled in from the default.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    /// A real number (integers are accepted where a real number is expected).
    Float(f64),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A word, for [`ParamKind::Choice`].
    Text(String),
    /// A list of numbers.
    List(Vec<f64>),
    /// A table of names to strings, in the order given, for [`ParamKind::PathMap`].
    Map(Vec<(String, String)>),
}

impl ParamValue {
    fn type_name(&self) -> &'static str {
        match self {
            ParamValue::Float(_) => "a number",
            ParamValue::Int(_) => "an integer",
            ParamValue::Bool(_) => "a boolean",
            ParamValue::Text(_) => "a string",
            ParamValue::List(_) => "a list",
            ParamValue::Map(_) => "a table",
        }
    }
}

/// Why a parameter was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamError {
    /// The node type has no parameter of that name.
    Unknown {
        /// The name given.
        name: String,
        /// The names the node type accepts.
        valid: Vec<&'static str>,
    },
    /// The value does not fit the parameter's declaration.
    Invalid {
        /// The parameter.
        name: String,
        /// What is wrong and what would be accepted.
        message: String,
    },
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::Unknown { name, valid } if valid.is_empty() => {
                write!(
                    f,
                    "unknown parameter `{name}`: this node type takes no parameters"
                )
            }
            ParamError::Unknown { name, valid } => write!(
                f,
                "unknown parameter `{name}`; valid parameters are {}",
                quoted_list(valid)
            ),
            ParamError::Invalid { name, message } => write!(f, "parameter `{name}`: {message}"),
        }
    }
}

impl std::error::Error for ParamError {}

/// The complete, validated parameters of one node: every declared parameter has a value.
#[derive(Clone, Debug)]
pub struct Params {
    specs: &'static [ParamSpec],
    values: Vec<ParamValue>,
}

impl Params {
    /// Validates `given` against `specs` and fills in defaults.
    ///
    /// ```
    /// use downbeat_graph::{ParamKind, ParamSpec, ParamValue, Params, Unit};
    /// static SPECS: &[ParamSpec] = &[ParamSpec {
    ///     name: "gain",
    ///     doc: "linear gain",
    ///     kind: ParamKind::Float { min: 0.0, max: 4.0, default: 1.0 },
    ///     unit: Unit::None,
    ///     live: true,
    /// }];
    /// let p = Params::validate(SPECS, vec![("gain".into(), ParamValue::Int(2))]).unwrap();
    /// assert_eq!(p.float("gain"), 2.0);
    /// assert!(Params::validate(SPECS, vec![("gain".into(), ParamValue::Float(9.0))]).is_err());
    /// ```
    pub fn validate(
        specs: &'static [ParamSpec],
        given: impl IntoIterator<Item = (String, ParamValue)>,
    ) -> Result<Self, ParamError> {
        let mut values: Vec<Option<ParamValue>> = vec![None; specs.len()];
        for (name, value) in given {
            let Some(i) = specs.iter().position(|s| s.name == name) else {
                return Err(ParamError::Unknown {
                    name,
                    valid: specs.iter().map(|s| s.name).collect(),
                });
            };
            values[i] = Some(check(&specs[i], value)?);
        }
        // A path without a default names the file the node is about: there is no sensible
        // stand-in for it.
        for (v, s) in values.iter().zip(specs) {
            if v.is_none() && matches!(s.kind, ParamKind::Path { default: "" }) {
                return Err(ParamError::Invalid {
                    name: s.name.to_string(),
                    message: "required: give the path of a file".to_string(),
                });
            }
        }
        let values = values
            .into_iter()
            .zip(specs)
            .map(|(v, s)| v.unwrap_or_else(|| s.kind.default_value()))
            .collect();
        Ok(Self { specs, values })
    }

    /// The declarations these values follow.
    pub fn specs(&self) -> &'static [ParamSpec] {
        self.specs
    }

    fn get(&self, name: &str) -> &ParamValue {
        let i = self
            .specs
            .iter()
            .position(|s| s.name == name)
            .unwrap_or_else(|| panic!("node asked for undeclared parameter `{name}`"));
        &self.values[i]
    }

    /// The value of a `Float` parameter.
    ///
    /// # Panics
    /// If `name` is not a declared `Float` parameter: a bug in the node, not bad input.
    pub fn float(&self, name: &str) -> f64 {
        match self.get(name) {
            ParamValue::Float(v) => *v,
            other => panic!("parameter `{name}` is {other:?}, not a float"),
        }
    }

    /// The value of an `Int` parameter.
    ///
    /// # Panics
    /// If `name` is not a declared `Int` parameter.
    pub fn int(&self, name: &str) -> i64 {
        match self.get(name) {
            ParamValue::Int(v) => *v,
            other => panic!("parameter `{name}` is {other:?}, not an integer"),
        }
    }

    /// The value of a `Bool` parameter.
    ///
    /// # Panics
    /// If `name` is not a declared `Bool` parameter.
    pub fn bool(&self, name: &str) -> bool {
        match self.get(name) {
            ParamValue::Bool(v) => *v,
            other => panic!("parameter `{name}` is {other:?}, not a boolean"),
        }
    }

    /// The value of a `Choice` parameter.
    ///
    /// # Panics
    /// If `name` is not a declared `Choice` parameter.
    pub fn choice(&self, name: &str) -> &str {
        match self.get(name) {
            ParamValue::Text(v) => v,
            other => panic!("parameter `{name}` is {other:?}, not a choice"),
        }
    }

    /// The value of a `Path` parameter.
    ///
    /// # Panics
    /// If `name` is not a declared `Path` parameter.
    pub fn path(&self, name: &str) -> &std::path::Path {
        match self.get(name) {
            ParamValue::Text(v) => std::path::Path::new(v),
            other => panic!("parameter `{name}` is {other:?}, not a path"),
        }
    }

    /// The value of a `PathMap` parameter: (name, path) pairs in the order given.
    ///
    /// # Panics
    /// If `name` is not a declared `PathMap` parameter.
    pub fn path_map(&self, name: &str) -> &[(String, String)] {
        match self.get(name) {
            ParamValue::Map(v) => v,
            other => panic!("parameter `{name}` is {other:?}, not a table of paths"),
        }
    }

    /// The value of a `FloatList` parameter.
    ///
    /// # Panics
    /// If `name` is not a declared `FloatList` parameter.
    pub fn list(&self, name: &str) -> &[f64] {
        match self.get(name) {
            ParamValue::List(v) => v,
            other => panic!("parameter `{name}` is {other:?}, not a list"),
        }
    }
}

fn check(spec: &ParamSpec, value: ParamValue) -> Result<ParamValue, ParamError> {
    let invalid = |got: &str| ParamError::Invalid {
        name: spec.name.to_string(),
        message: format!("got {got}, expected {}", spec.kind.describe()),
    };
    let in_range = |v: f64, min: f64, max: f64| v.is_finite() && v >= min && v <= max;
    match (&spec.kind, value) {
        (ParamKind::Float { min, max, .. }, ParamValue::Float(v)) if in_range(v, *min, *max) => {
            Ok(ParamValue::Float(v))
        }
        (ParamKind::Float { min, max, .. }, ParamValue::Int(v))
            if in_range(v as f64, *min, *max) =>
        {
            Ok(ParamValue::Float(v as f64))
        }
        (ParamKind::Float { .. }, ParamValue::Float(v)) => Err(invalid(&v.to_string())),
        (ParamKind::Float { .. }, ParamValue::Int(v)) => Err(invalid(&v.to_string())),
        (ParamKind::Int { min, max, .. }, ParamValue::Int(v)) if v >= *min && v <= *max => {
            Ok(ParamValue::Int(v))
        }
        (ParamKind::Int { .. }, ParamValue::Int(v)) => Err(invalid(&v.to_string())),
        (ParamKind::Bool { .. }, ParamValue::Bool(v)) => Ok(ParamValue::Bool(v)),
        (ParamKind::Choice { options, .. }, ParamValue::Text(v)) => {
            if options.contains(&v.as_str()) {
                Ok(ParamValue::Text(v))
            } else {
                Err(invalid(&format!("\"{v}\"")))
            }
        }
        (ParamKind::FloatList { min, max, .. }, ParamValue::List(v)) => {
            if !v.is_empty() && v.iter().all(|&x| in_range(x, *min, *max)) {
                Ok(ParamValue::List(v))
            } else {
                Err(invalid(&format!("{v:?}")))
            }
        }
        (ParamKind::Path { .. }, ParamValue::Text(v)) if !v.is_empty() => Ok(ParamValue::Text(v)),
        (ParamKind::Path { .. }, ParamValue::Text(_)) => Err(ParamError::Invalid {
            name: spec.name.to_string(),
            message: "no file given".to_string(),
        }),
        (ParamKind::PathMap, ParamValue::Map(v)) => match v.iter().find(|(_, p)| p.is_empty()) {
            Some((key, _)) => Err(ParamError::Invalid {
                name: spec.name.to_string(),
                message: format!("`{key}`: no file given"),
            }),
            None => Ok(ParamValue::Map(v)),
        },
        (_, other) => Err(invalid(other.type_name())),
    }
}

pub(crate) fn quoted_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// True when `value` is accepted by the `Float` parameter at `index` of `specs`: the check
/// [`Node::set_param`](crate::Node::set_param) implementations make before they take a
/// value. Real-time safe.
///
/// ```
/// use downbeat_graph::{float_param_accepts, ParamKind, ParamSpec, Unit};
///
/// let specs = [ParamSpec {
///     name: "gain",
///     doc: "linear gain",
///     kind: ParamKind::Float { min: 0.0, max: 4.0, default: 1.0 },
///     unit: Unit::None,
///     live: true,
/// }];
/// assert!(float_param_accepts(&specs, 0, 2.0));
/// assert!(!float_param_accepts(&specs, 0, 5.0));
/// ```
pub fn float_param_accepts(specs: &[ParamSpec], index: usize, value: f32) -> bool {
    match specs.get(index) {
        Some(ParamSpec {
            kind: ParamKind::Float { min, max, .. },
            ..
        }) => {
            let v = f64::from(value);
            v.is_finite() && v >= *min && v <= *max
        }
        _ => false,
    }
}

/// True when every value of `curve` is accepted by the `Float` parameter at `index` of
/// `specs`: the check [`Node::follow_param`](crate::Node::follow_param) implementations
/// make. A ramp is monotonic, so its two ends bound it. Real-time safe.
///
/// ```
/// use downbeat_graph::{curve_accepts, ParamCurve, ParamKind, ParamSpec, Shape, Unit};
///
/// let specs = [ParamSpec {
///     name: "gain",
///     doc: "linear gain",
///     kind: ParamKind::Float { min: 0.0, max: 4.0, default: 1.0 },
///     unit: Unit::None,
///     live: true,
/// }];
/// assert!(curve_accepts(&specs, 0, &ParamCurve::ramp(Shape::Linear, 1.0, 3.0, 64)));
/// assert!(!curve_accepts(&specs, 0, &ParamCurve::ramp(Shape::Linear, 1.0, 5.0, 64)));
/// ```
pub fn curve_accepts(specs: &[ParamSpec], index: usize, curve: &ParamCurve) -> bool {
    let (lo, hi) = curve.bounds();
    float_param_accepts(specs, index, lo) && float_param_accepts(specs, index, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_param_accepts_checks_range_and_kind() {
        let specs = [
            ParamSpec {
                name: "n",
                doc: "",
                kind: ParamKind::Int {
                    min: 1,
                    max: 32,
                    default: 2,
                },
                unit: Unit::None,
                live: false,
            },
            ParamSpec {
                name: "x",
                doc: "",
                kind: ParamKind::Float {
                    min: 0.0,
                    max: 1.0,
                    default: 0.5,
                },
                unit: Unit::None,
                live: false,
            },
        ];
        assert!(float_param_accepts(&specs, 1, 0.5));
        assert!(!float_param_accepts(&specs, 1, 1.5));
        assert!(!float_param_accepts(&specs, 1, f32::NAN));
        assert!(!float_param_accepts(&specs, 0, 1.0));
        assert!(!float_param_accepts(&specs, 2, 0.0));
    }
}
