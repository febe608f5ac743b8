//! Python values as node parameters, and `{"node.param": value}` overrides applied to a
//! project.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use downbeat::graph::ParamValue;
use downbeat::project::Project;

use crate::errors::ParameterError;

/// `value` as a parameter value: `bool`, `int`, `float`, `str` (or a path), a list or tuple
/// of numbers, or a dict of strings to strings; `what` names it in the error.
pub(crate) fn param_value(value: &Bound<'_, PyAny>, what: &str) -> PyResult<ParamValue> {
    // `bool` first: it is an `int` to Python.
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(ParamValue::Bool(b.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        return match value.extract::<i64>() {
            Ok(i) => Ok(ParamValue::Int(i)),
            Err(_) => Err(ParameterError::new_err(format!(
                "{what}: {value} does not fit in 64 bits"
            ))),
        };
    }
    if value.is_instance_of::<PyFloat>() {
        return Ok(ParamValue::Float(value.extract::<f64>()?));
    }
    if value.is_instance_of::<PyString>() {
        return Ok(ParamValue::Text(value.extract::<String>()?));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        return value
            .extract::<Vec<f64>>()
            .map(ParamValue::List)
            .map_err(|_| ParameterError::new_err(format!("{what}: a list must hold numbers")));
    }
    if let Ok(d) = value.cast::<PyDict>() {
        let mut map = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            match (k.extract::<String>(), v.extract::<String>()) {
                (Ok(k), Ok(v)) => map.push((k, v)),
                _ => {
                    return Err(ParameterError::new_err(format!(
                        "{what}: a dict must map strings to strings"
                    )))
                }
            }
        }
        return Ok(ParamValue::Map(map));
    }
    // A path (`pathlib.Path`, anything with `__fspath__`).
    if let Ok(fspath) = value.call_method0("__fspath__") {
        if let Ok(s) = fspath.extract::<String>() {
            return Ok(ParamValue::Text(s));
        }
    }
    let kind = value.get_type().name()?;
    Err(ParameterError::new_err(format!(
        "{what}: a {kind} is not a parameter value (give a bool, int, float, str, path, \
         list of numbers or dict of strings)"
    )))
}

/// Sets each `"node.param": value` of `params` on the project's nodes, as if the file said
/// so; the project checks them when it is built.
pub(crate) fn apply_overrides(project: &mut Project, params: &Bound<'_, PyDict>) -> PyResult<()> {
    for (key, value) in params.iter() {
        let key: String = key
            .extract()
            .map_err(|_| ParameterError::new_err("params: keys are \"node.param\" strings"))?;
        let Some((node, param)) = key.split_once('.') else {
            return Err(ParameterError::new_err(format!(
                "params: `{key}` is not \"node.param\""
            )));
        };
        let Some(n) = project.nodes.iter_mut().find(|n| n.name == node) else {
            let names: Vec<&str> = project.nodes.iter().map(|n| n.name.as_str()).collect();
            return Err(ParameterError::new_err(format!(
                "params: `{key}`: {} has no node `{node}` (its nodes: {})",
                project.file,
                names.join(", ")
            )));
        };
        // Plugin types take the plugin's own names, which only loading it tells.
        if let Some(ty) = downbeat::lookup_node_type(&n.kind) {
            let specs = ty.params();
            if ty.open_params().is_none() && !specs.iter().any(|s| s.name == param) {
                let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
                return Err(ParameterError::new_err(format!(
                    "params: `{key}`: a `{}` node has no parameter `{param}` (its parameters: {})",
                    n.kind,
                    names.join(", ")
                )));
            }
        }
        let value = param_value(&value, &format!("params: `{key}`"))?;
        match n.params.iter_mut().find(|(p, _)| p == param) {
            Some(slot) => slot.1 = value,
            None => n.params.push((param.to_string(), value)),
        }
    }
    Ok(())
}
