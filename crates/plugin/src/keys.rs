//! The keys a plugin node type reads from a project: its own (a path, an id) as text, and the
//! plugin's parameters by name, checked against their ranges. One rule for the CLAP and VST3
//! node types.

use downbeat_graph::{Node, ParamError, ParamKind, ParamValue};

/// The text value of key `name`; `what` says what it names, for the error.
pub(crate) fn text(name: &str, value: ParamValue, what: &str) -> Result<String, ParamError> {
    match value {
        ParamValue::Text(t) => Ok(t),
        _ => Err(ParamError::Invalid {
            name: name.into(),
            message: format!("expected {what} as a string"),
        }),
    }
}

/// Sets each of `values` on `node` at frame 0, by the parameter's name: a number within
/// the parameter's range.
///
/// # Errors
/// [`ParamError::Unknown`] for a name the plugin has no parameter of (listing those it has),
/// [`ParamError::Invalid`] for a value that is not a number or out of range.
pub(crate) fn set_params(
    node: &mut dyn Node,
    values: Vec<(String, ParamValue)>,
) -> Result<(), ParamError> {
    let specs = node.params();
    for (name, value) in values {
        let Some(index) = specs.iter().position(|s| s.name == name) else {
            return Err(ParamError::Unknown {
                name,
                valid: specs.iter().map(|s| s.name).collect(),
            });
        };
        let v = match value {
            ParamValue::Float(v) => v,
            ParamValue::Int(v) => v as f64,
            _ => {
                return Err(ParamError::Invalid {
                    name,
                    message: format!("expected {}", specs[index].kind.describe()),
                })
            }
        };
        // Every plugin parameter is declared as a Float with the plugin's range.
        let (min, max) = match specs[index].kind {
            ParamKind::Float { min, max, .. } => (min, max),
            _ => (f64::NEG_INFINITY, f64::INFINITY),
        };
        if !(min..=max).contains(&v) {
            return Err(ParamError::Invalid {
                name,
                message: format!("{v} is out of range: expected a number from {min} to {max}"),
            });
        }
        node.set_param(index, v as f32);
    }
    Ok(())
}
