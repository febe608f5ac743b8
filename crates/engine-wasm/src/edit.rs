//! Live edits of the running graph: a batch (the ABI's `db_edit`, JSON), its new nodes made
//! and its edges read by the project file's own parser, and applied to the session's
//! [`Editor`] all or none.
//!
//! ```json
//! { "add": { "echo": { "type": "karplus", "interval": 0.3 } },
//!   "remove": ["old"],
//!   "connect": ["echo -> mix @ -6 dB", "kick -> comp:sidechain"],
//!   "disconnect": ["pad -> mix"],
//!   "output": "out" }
//! ```
//!
//! A node to add is written as its `[nodes.NAME]` table in a project file would be (`type` and
//! the parameters), an edge as a project's `edges` entry (a chain `"a -> b -> c"` is its
//! edges, a port after a colon, a level after an `@`). Both go through
//! [`Project::parse`](downbeat::project::Project::parse), so a node type, a parameter or an
//! edge is checked and worded exactly as in a project file, and a node is built by its type
//! as `Project::build` builds it. The steps run in a fixed order: `disconnect`, `remove`,
//! `add`, `connect`, then `output`.

use std::fmt::{self, Write as _};

use downbeat::lookup_node_type;
use downbeat::project::{Project, ProjectError};
use downbeat_graph::{EditError, Editor, Node, NodeConfig};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{Code, Error};
use crate::refused;

/// One batch of edits, as `db_edit` takes it, in the order given.
#[derive(Debug, Default, PartialEq)]
pub struct Batch {
    /// Nodes to add: name, and the node's table (`type` and parameters) in the order given.
    pub add: Vec<(String, Vec<(String, Value)>)>,
    /// Nodes to remove, with every edge to or from them.
    pub remove: Vec<String>,
    /// Edges to add, as a project writes them.
    pub connect: Vec<String>,
    /// Edges to remove, as a project writes them (without a level).
    pub disconnect: Vec<String>,
    /// The node to make the output.
    pub output: Option<String>,
}

/// The keys of a batch, for the message that refuses another.
const KEYS: &str = "`add`, `remove`, `connect`, `disconnect` and `output`";

impl Batch {
    /// Reads a batch from its JSON text.
    ///
    /// # Errors
    /// [`Code::BadInput`]: not JSON, or not shaped as a batch (the message says where).
    pub fn parse(json: &str) -> Result<Batch, Error> {
        let mut de = serde_json::Deserializer::from_str(json);
        let batch = (&mut de)
            .deserialize_map(BatchVisitor)
            .and_then(|b| de.end().map(|()| b))
            .map_err(|e| Error::new(Code::BadInput, format!("edit: {e}")))?;
        Ok(batch)
    }
}

struct BatchVisitor;

impl<'de> Visitor<'de> for BatchVisitor {
    type Value = Batch;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object with {KEYS}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Batch, A::Error> {
        let mut batch = Batch::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "add" => {
                    let Ordered(nodes) = map.next_value::<Ordered<Ordered<Value>>>()?;
                    batch.add = nodes.into_iter().map(|(n, Ordered(t))| (n, t)).collect();
                }
                "remove" => batch.remove = strings(&key, map.next_value()?, "node names")?,
                "connect" => batch.connect = strings(&key, map.next_value()?, "edges")?,
                "disconnect" => batch.disconnect = strings(&key, map.next_value()?, "edges")?,
                "output" => match map.next_value::<Value>()? {
                    Value::String(s) => batch.output = Some(s),
                    Value::Null => batch.output = None,
                    other => {
                        return Err(de::Error::custom(format!(
                            "`output` must be a node's name, got {}",
                            kind(&other)
                        )))
                    }
                },
                other => {
                    return Err(de::Error::custom(format!(
                        "unknown key `{other}`: a batch has {KEYS}"
                    )))
                }
            }
        }
        Ok(batch)
    }
}

/// A list of strings, or the error saying what `key` takes.
fn strings<E: de::Error>(key: &str, v: Value, what: &str) -> Result<Vec<String>, E> {
    let bad = |v: &Value| {
        E::custom(format!(
            "`{key}` must be a list of {what} (strings), got {}",
            kind(v)
        ))
    };
    let Value::Array(items) = v else {
        return Err(bad(&v));
    };
    items
        .into_iter()
        .map(|x| match x {
            Value::String(s) => Ok(s),
            other => Err(E::custom(format!(
                "`{key}` must be a list of {what} (strings), and one is {}",
                kind(&other)
            ))),
        })
        .collect()
}

/// What a JSON value is, for messages.
fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("{b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// A JSON object's entries in the order written (`serde_json::Map` sorts them; the order in
/// which nodes are added is the order they are placed in).
struct Ordered<T>(Vec<(String, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Ordered<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object (`add`: node names to their tables, each with a `type`)")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered<T>, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, T>()? {
                    entries.push(entry);
                }
                Ok(Ordered(entries))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A refusal of `code` saying `what` was asked and why not.
fn refusal(code: Code, what: &str, why: impl fmt::Display) -> Error {
    Error::new(code, format!("{what}: {why}"))
}

/// A project parser's error as one line: what is wrong, then what would be valid.
fn explain(e: &ProjectError) -> String {
    match &e.help {
        Some(help) => format!("{}; {help}", e.message),
        None => e.message.clone(),
    }
}

/// `s` as a TOML basic string: a JSON string is one (the same escapes).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// Writes `v` as a TOML value; `Err` names what TOML has no value for.
fn toml_value(v: &Value, out: &mut String) -> Result<(), &'static str> {
    match v {
        Value::Null => return Err("null (NaN or Infinity become null in JSON)"),
        Value::Bool(b) => write!(out, "{b}").expect("writing to a String"),
        // An integer as an integer, a float as Rust prints it: both TOML numbers.
        Value::Number(n) => write!(out, "{n}").expect("writing to a String"),
        Value::String(s) => out.push_str(&quoted(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                toml_value(x, out)?;
            }
            out.push(']');
        }
        Value::Object(entries) => {
            out.push('{');
            for (i, (k, x)) in entries.iter().enumerate() {
                out.push_str(if i > 0 { ", " } else { " " });
                write!(out, "{} = ", quoted(k)).expect("writing to a String");
                toml_value(x, out)?;
            }
            out.push_str(" }");
        }
    }
    Ok(())
}

/// Builds node `name` from its table, as a project's `[nodes.NAME]` would be: parsed and
/// checked by the project parser, refused by name when the browser cannot run its type,
/// built by its type for `cfg`.
///
/// # Errors
/// [`Code::Refused`] (an unknown type or parameter, a bad value: the project file's
/// message), [`Code::Unsupported`] for a type that needs the operating system.
pub fn build_node(
    name: &str,
    table: &[(String, Value)],
    cfg: &NodeConfig,
) -> Result<Box<dyn Node>, Error> {
    let what = &format!("add `{name}`");
    // The node's table as a project file writes it, with an output beside it (a project has
    // exactly one) unless the node is one.
    let mut text = format!("[nodes.{}]\n", quoted(name));
    for (key, value) in table {
        write!(text, "{} = ", quoted(key)).expect("writing to a String");
        toml_value(value, &mut text).map_err(|v| {
            refusal(
                Code::Refused,
                what,
                format!("`{key}` is {v}, not a parameter value"),
            )
        })?;
        text.push('\n');
    }
    let is_output = table
        .iter()
        .any(|(k, v)| k == "type" && v.as_str() == Some("output"));
    if !is_output {
        let other = if name == "out" { "out_" } else { "out" };
        writeln!(text, "[nodes.{other}]\ntype = \"output\"").expect("writing to a String");
    }
    let project =
        Project::parse(&text, "edit").map_err(|e| refusal(Code::Refused, what, explain(&e)))?;
    let node = project
        .nodes
        .into_iter()
        .find(|n| n.name == name)
        .expect("the parser keeps the node's name");
    if let Some(why) = refused::refusal(&node.kind) {
        return Err(Error::new(
            Code::Unsupported,
            format!("{what}: {}", refused::message(name, &node.kind, why)),
        ));
    }
    let ty = lookup_node_type(&node.kind).expect("type checked while parsing");
    ty.create(node.params, cfg)
        .map_err(|e| refusal(Code::Refused, what, e))
}

/// An edge (from, to, level in dB).
type EdgeSpec = (String, String, Option<f64>);

/// The edges `chain` writes, read as a project's `edges` entry.
fn edges(step: &str, chain: &str) -> Result<Vec<EdgeSpec>, Error> {
    let text = format!(
        "edges = [{}]\n[nodes.out]\ntype = \"output\"\n",
        quoted(chain)
    );
    let project = Project::parse(&text, "edit").map_err(|e| {
        refusal(
            Code::Refused,
            &format!("{step} {}", quoted(chain)),
            explain(&e),
        )
    })?;
    Ok(project
        .edges
        .into_iter()
        .zip(project.edge_gains)
        .map(|((from, to), level)| (from, to, level))
        .collect())
}

/// Makes every edit of `batch` in `editor`, in the order `disconnect`, `remove`, `add`,
/// `connect`, `output`, building the new nodes for `cfg` first. The caller commits. On an
/// error the editor's pending edits are discarded, so it is where the last commit left it.
///
/// # Errors
/// [`Code::Refused`] naming the step and the culprit (an unknown node, a name taken, an edge
/// that is there already or not there, removing the output, an output of another channel
/// count, an unknown type or parameter), [`Code::Unsupported`] for a node type the browser
/// cannot run.
pub fn apply(editor: &mut Editor, batch: Batch, cfg: &NodeConfig) -> Result<(), Error> {
    let result = apply_all(editor, batch, cfg);
    if result.is_err() {
        editor.discard();
    }
    result
}

fn apply_all(editor: &mut Editor, batch: Batch, cfg: &NodeConfig) -> Result<(), Error> {
    // An edge into a source is refused at `connect`, as a graph error: said without the
    // "does not compile" a commit's graph errors get.
    let edit_error = |what: String, e: EditError| match e {
        EditError::Graph(g) => refusal(Code::Refused, &what, g),
        e => refusal(Code::Refused, &what, e),
    };
    // Read everything before changing anything: a malformed entry refuses the batch as is.
    let mut disconnect = Vec::new();
    for chain in &batch.disconnect {
        for (from, to, level) in edges("disconnect", chain)? {
            if level.is_some() {
                return Err(refusal(
                    Code::Refused,
                    &format!("disconnect {}", quoted(chain)),
                    "an edge is removed by its ends; leave out the level",
                ));
            }
            disconnect.push((chain, from, to));
        }
    }
    let mut connect = Vec::new();
    for chain in &batch.connect {
        connect.extend(edges("connect", chain)?.into_iter().map(|e| (chain, e)));
    }
    let mut nodes = Vec::with_capacity(batch.add.len());
    for (name, table) in &batch.add {
        nodes.push((name, build_node(name, table, cfg)?));
    }
    for (chain, from, to) in &disconnect {
        editor
            .disconnect(from, to)
            .map_err(|e| edit_error(format!("disconnect {}", quoted(chain)), e))?;
    }
    for name in &batch.remove {
        editor
            .remove(name)
            .map_err(|e| edit_error(format!("remove `{name}`"), e))?;
    }
    for (name, node) in nodes {
        editor
            .add_boxed(name.as_str(), node)
            .map_err(|e| edit_error(format!("add `{name}`"), e))?;
    }
    for (chain, (from, to, level)) in &connect {
        let done = match level {
            Some(db) => editor.connect_gain(from, to, *db),
            None => editor.connect(from, to),
        };
        done.map_err(|e| edit_error(format!("connect {}", quoted(chain)), e))?;
    }
    if let Some(output) = &batch.output {
        editor
            .set_output(output)
            .map_err(|e| edit_error(format!("output `{output}`"), e))?;
    }
    Ok(())
}
