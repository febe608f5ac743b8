//! The JSON table of what the exports can address (the ABI's `db_table_ptr`).

use downbeat::Engine;
use downbeat_graph::{NodeKey, ParamId, ParamTable};
use serde_json::{json, Value};

/// A finite number as JSON, an infinite bound (an output's) as `null`.
fn bound(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// `{"params":[...],"instruments":[...],"sample_rate":..,"block_size":..,"channels":..}`,
/// each param and instrument with its ABI id (its position in `params` / `instruments`).
/// Those of nodes `table` does not have (an edit removed them) are left out: their ids stay
/// taken, so the ids listed may have gaps. `initial` holds each parameter's value when its id
/// was given.
pub(crate) fn json(
    engine: &Engine,
    table: &ParamTable,
    params: &[ParamId],
    initial: &[f32],
    instruments: &[NodeKey],
) -> String {
    let params: Vec<Value> = params
        .iter()
        .enumerate()
        .filter(|(_, p)| table.node_name(p.node()).is_some())
        .map(|(id, &p)| {
            let initial = initial.get(id).copied().unwrap_or_else(|| table.initial(p));
            let (node, name) = table.names(p);
            let (min, max) = table.range(p);
            json!({
                "id": id,
                "node": node,
                "name": name,
                "min": bound(min),
                "max": bound(max),
                "initial": initial,
                "output": table.is_output(p),
            })
        })
        .collect();
    let instruments: Vec<Value> = instruments
        .iter()
        .enumerate()
        .filter_map(|(id, &k)| Some(json!({"id": id, "node": table.node_name(k)?})))
        .collect();
    json!({
        "params": params,
        "instruments": instruments,
        "sample_rate": engine.sample_rate(),
        "block_size": engine.block_size(),
        "channels": engine.channels(),
    })
    .to_string()
}
