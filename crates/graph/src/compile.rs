//! [`Graph::compile`]: checks a graph and lays it out as a [`Schedule`].

use std::collections::{HashMap, VecDeque};

use crate::buffer::{AudioMut, AudioRef};
use crate::edge_gain::{EdgeGain, EDGE_GAIN_FLOOR_DB};
use crate::edit::{Description, Previous, StandIn};
use crate::error::GraphError;
use crate::graph::{Endpoint, Entry, Graph};
use crate::node::Port;
use crate::node::{Node, ProcessContext};
use crate::schedule::{InputPlan, Kept, Route, RouteFrom, Schedule, Slot};

/// The audio format a schedule is compiled for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompileConfig {
    /// Sample rate in Hz.
    pub sample_rate: u32,
    /// Largest block [`Schedule::process`] will be asked for; every buffer is this long.
    pub max_block: usize,
}

impl Graph {
    /// Checks the graph and turns it into a [`Schedule`]: nodes in topological order, every
    /// buffer allocated for `cfg.max_block` frames, multiple inputs planned as sums.
    ///
    /// Paths of different [latency](crate::Node::latency) into one node are aligned: on
    /// each edge that arrives early, compile inserts a delay (a node named
    /// `"FROM -> TO (latency N)"`) by the difference, so every input of a node lags the
    /// graph's sources by the same number of frames. [`Schedule::latency`] is then the
    /// output's lag.
    ///
    /// Runs off the audio thread (it allocates). On error the graph is returned untouched
    /// inside nothing: the error names the nodes and the edge involved.
    ///
    /// ```
    /// use downbeat_graph::{CompileConfig, Graph, GraphError};
    /// use downbeat_nodes::{Gain, Output};
    ///
    /// let mut g = Graph::new();
    /// let a = g.add("a", Gain::new(2, 1.0));
    /// let b = g.add("b", Gain::new(2, 1.0));
    /// g.connect(a, b);
    /// g.connect(b, a);
    /// let out = g.add("out", Output::new(2));
    /// g.set_output(out);
    /// let cfg = CompileConfig { sample_rate: 48000, max_block: 64 };
    /// match g.compile(cfg) {
    ///     Err(GraphError::Cycle { nodes, .. }) => assert_eq!(nodes.len(), 2),
    ///     other => panic!("expected a cycle, got {:?}", other.err()),
    /// }
    /// ```
    pub fn compile(self, cfg: CompileConfig) -> Result<Schedule, GraphError> {
        self.compile_after(cfg, None)
    }

    /// [`compile`](Graph::compile) for an [`Editor`](crate::Editor): the entries marked
    /// `keep` are stand-ins for nodes running in `previous`, and so is every latency delay
    /// `previous` already has with the same name and channels (the same edge, the same
    /// length), so that its contents carry over.
    pub(crate) fn compile_after(
        self,
        cfg: CompileConfig,
        previous: Option<&Previous>,
    ) -> Result<Schedule, GraphError> {
        assert!(cfg.max_block > 0, "max_block must be at least 1");
        let n = self.nodes.len();
        let mut by_name: HashMap<&str, usize> = HashMap::with_capacity(n);
        for (i, e) in self.nodes.iter().enumerate() {
            if by_name.insert(e.name.as_str(), i).is_some() {
                return Err(GraphError::DuplicateName {
                    name: e.name.clone(),
                });
            }
        }

        let unknown = |edge: usize, name: &str| {
            let mut known: Vec<&String> = self.nodes.iter().map(|e| &e.name).collect();
            known.sort_by_key(|k| (edit_distance(k, name), k.as_str()));
            GraphError::UnknownNode {
                edge,
                name: name.to_string(),
                known: known.into_iter().cloned().collect(),
            }
        };
        // A node and the port an endpoint names (`None`: `main`). A name that is a node's
        // whole name wins over a `node:port` reading of it.
        let resolve = |ep: &Endpoint, edge: usize| -> Result<(usize, Option<String>), GraphError> {
            match ep {
                Endpoint::Id(id) | Endpoint::Port(id, _) if id.0 >= n => {
                    Err(GraphError::DanglingEdge { edge, id: id.0 })
                }
                Endpoint::Id(id) => Ok((id.0, None)),
                Endpoint::Port(id, port) => Ok((id.0, Some(port.clone()))),
                Endpoint::Name(name) => match by_name.get(name.as_str()) {
                    Some(&i) => Ok((i, None)),
                    None => match name.split_once(':') {
                        Some((node, port)) => by_name
                            .get(node)
                            .map(|&i| (i, Some(port.to_string())))
                            .ok_or_else(|| unknown(edge, node)),
                        None => Err(unknown(edge, name)),
                    },
                },
            }
        };
        let in_ports: Vec<Vec<Port>> = self.nodes.iter().map(|e| e.node.input_ports()).collect();
        let out_ports: Vec<Vec<Port>> = self.nodes.iter().map(|e| e.node.output_ports()).collect();
        // The channels of `port` (`main` when `None`) among `ports`: (first, count).
        let find = |ports: &[Port], port: Option<&str>| -> Option<(usize, usize)> {
            let want = port.unwrap_or(Port::MAIN);
            let mut first = 0;
            for p in ports {
                if p.name == want {
                    return Some((first, p.channels));
                }
                first += p.channels;
            }
            // A node whose single port has another name takes edges that name none there.
            match (port, ports) {
                (None, [only]) => Some((0, only.channels)),
                _ => None,
            }
        };

        let mut edges: Vec<(usize, usize)> = Vec::with_capacity(self.edges.len());
        let mut routes: Vec<Route> = Vec::with_capacity(self.edges.len());
        // Per edge with a level: its index, name and level (nodes put on it after the checks).
        let mut levels: Vec<(usize, String, f64)> = Vec::new();
        for (k, e) in self.edges.iter().enumerate() {
            let ((from, from_port), (to, to_port)) = (resolve(&e.from, k)?, resolve(&e.to, k)?);
            let name = |i: usize, port: &Option<String>| match port {
                Some(p) => format!("{}:{p}", self.nodes[i].name),
                None => self.nodes[i].name.clone(),
            };
            if self.nodes[to].node.input_channels() == 0 {
                return Err(GraphError::NoInputs {
                    edge: k,
                    from: name(from, &from_port),
                    to: name(to, &to_port),
                });
            }
            let port_error = |node: usize, port: &Option<String>, input: bool| {
                let ports = if input {
                    &in_ports[node]
                } else {
                    &out_ports[node]
                };
                GraphError::UnknownPort {
                    edge: k,
                    node: self.nodes[node].name.clone(),
                    port: port.clone().unwrap_or_else(|| Port::MAIN.to_string()),
                    input,
                    known: ports.iter().map(|p| p.name.clone()).collect(),
                }
            };
            let (out_first, out_ch) = find(&out_ports[from], from_port.as_deref())
                .ok_or_else(|| port_error(from, &from_port, false))?;
            let (in_first, in_ch) = find(&in_ports[to], to_port.as_deref())
                .ok_or_else(|| port_error(to, &to_port, true))?;
            let route = Route {
                from: out_first,
                to: in_first,
                channels: in_ch,
            };
            if edges
                .iter()
                .zip(&routes)
                .any(|(&(f, t), r)| (f, t, r.from, r.to) == (from, to, route.from, route.to))
            {
                return Err(GraphError::DuplicateEdge {
                    edge: k,
                    from: name(from, &from_port),
                    to: name(to, &to_port),
                });
            }
            if out_ch != in_ch {
                return Err(GraphError::ChannelMismatch {
                    edge: k,
                    from: name(from, &from_port),
                    from_channels: out_ch,
                    to: name(to, &to_port),
                    to_channels: in_ch,
                });
            }
            if let Some(db) = e.gain_db {
                let range = EDGE_GAIN_FLOOR_DB..=24.0;
                if !range.contains(&db) {
                    return Err(GraphError::EdgeGain {
                        edge: k,
                        from: name(from, &from_port),
                        to: name(to, &to_port),
                        gain_db: db,
                    });
                }
                let edge_name = format!("{} -> {}", name(from, &from_port), name(to, &to_port));
                levels.push((k, edge_name, db));
            }
            edges.push((from, to));
            routes.push(route);
        }

        let output = self.output.ok_or(GraphError::MissingOutput)?.0;
        if output >= n {
            return Err(GraphError::MissingOutput);
        }

        let order = topological_order(n, &edges).map_err(|cycle| {
            let edge = edges
                .iter()
                .position(|&(f, t)| f == cycle[0] && t == cycle[1 % cycle.len()])
                .expect("a cycle is made of edges");
            GraphError::Cycle {
                nodes: cycle.iter().map(|&i| self.nodes[i].name.clone()).collect(),
                edge,
            }
        })?;

        let mut nodes = self.nodes;
        let order = put_levels(&mut nodes, &mut edges, &mut routes, levels, order, previous);
        let order = compensate_latency(&mut nodes, &mut edges, &mut routes, order, previous);
        let n = nodes.len();

        let mut slot_of = vec![0usize; n];
        for (slot, &node) in order.iter().enumerate() {
            slot_of[node] = slot;
        }
        let mut incoming: Vec<Vec<RouteFrom>> = vec![Vec::new(); n];
        let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (&(f, t), r) in edges.iter().zip(&routes) {
            incoming[slot_of[t]].push(RouteFrom {
                pred: slot_of[f],
                route: *r,
            });
            if !succs[slot_of[f]].contains(&slot_of[t]) {
                succs[slot_of[f]].push(slot_of[t]);
            }
        }
        let out_channels: Vec<usize> = {
            let mut by_slot = vec![0; n];
            for (slot, &node) in order.iter().enumerate() {
                by_slot[slot] = nodes[node].node.output_channels();
            }
            by_slot
        };

        let mut entries: Vec<Option<_>> = nodes.into_iter().map(Some).collect();
        let mut slots = Vec::with_capacity(n);
        let mut names = Vec::with_capacity(n);
        let mut kept = Kept {
            from: previous.map(|p| p.schedule),
            slots: Vec::new(),
        };
        for (slot, &node) in order.iter().enumerate() {
            let entry: Entry = entries[node].take().expect("each node is placed once");
            if let Some(there) = entry.keep {
                kept.slots.push((slot as u32, there as u32));
            }
            let in_ch = entry.node.input_channels();
            let out_ch = entry.node.output_channels();
            let mut routes = std::mem::take(&mut incoming[slot]);
            // A fixed order of addition, so serial and parallel sums give the same bits.
            routes.sort_unstable_by_key(|r| (r.pred, r.route.to, r.route.from));
            // Edges that each carry a whole output into the whole input sum as before (or
            // are read in place when there is one); any other routing goes port by port.
            let whole = routes.iter().all(|r| {
                r.route.from == 0
                    && r.route.to == 0
                    && r.route.channels == in_ch
                    && out_channels[r.pred] == in_ch
            }) && routes.windows(2).all(|w| w[0].pred != w[1].pred);
            let (input, in_buf) = match routes.len() {
                0 => (InputPlan::Silence, crate::prefaulted(in_ch * cfg.max_block)),
                1 if whole => (InputPlan::Direct(routes[0].pred), Vec::new()),
                _ if whole => (
                    InputPlan::Sum(routes.iter().map(|r| r.pred).collect()),
                    crate::prefaulted(in_ch * cfg.max_block),
                ),
                _ => (
                    InputPlan::Routed(routes),
                    crate::prefaulted(in_ch * cfg.max_block),
                ),
            };
            names.push(entry.name);
            // A kept node brings its own output buffer (with the last block in it, which a
            // successor reading it directly may still see); a stand-in needs none.
            let out_buf = match entry.keep {
                Some(_) => Vec::new(),
                None => crate::prefaulted(out_ch * cfg.max_block),
            };
            slots.push(Slot::new(entry.node, input, in_buf, out_buf));
        }

        Ok(Schedule::new(
            slots,
            succs,
            names,
            order,
            slot_of[output],
            cfg,
            kept,
        ))
    }
}

/// Puts an [`EdgeGain`] named after its edge on each edge that has a level, kept from
/// `previous` when it has one of that name and channels. Returns the processing order of the
/// new graph.
fn put_levels(
    nodes: &mut Vec<Entry>,
    edges: &mut Vec<(usize, usize)>,
    routes: &mut Vec<Route>,
    levels: Vec<(usize, String, f64)>,
    order: Vec<usize>,
    previous: Option<&Previous>,
) -> Vec<usize> {
    if levels.is_empty() {
        return order;
    }
    for (e, name, db) in levels {
        let (from, to) = edges[e];
        let route = routes[e];
        let at = nodes.len();
        let (node, keep) = implicit(&name, EdgeGain::new(route.channels, db as f32), previous);
        nodes.push(Entry { name, node, keep });
        edges[e] = (from, at);
        routes[e] = Route { to: 0, ..route };
        edges.push((at, to));
        routes.push(Route { from: 0, ..route });
    }
    topological_order(nodes.len(), edges).expect("a node on an edge keeps the graph acyclic")
}

/// A node compile makes itself (a level, a latency delay), or a stand-in for the one
/// `previous` runs under the same name with the same channels: a live edit that leaves its
/// edge alone keeps it (its level and ramp, its delay line's contents).
fn implicit(
    name: &str,
    fresh: impl Node,
    previous: Option<&Previous>,
) -> (Box<dyn Node>, Option<usize>) {
    let channels = (fresh.input_channels(), fresh.output_channels());
    match previous
        .and_then(|p| p.slots.get(name))
        .filter(|s| s.channels == channels)
    {
        Some(s) => (
            Box::new(StandIn::new(Description::of(&fresh))),
            Some(s.position),
        ),
        None => (Box::new(fresh), None),
    }
}

/// Aligns every path into each node: computes, in topological `order`, the frame at which
/// each node's input and output lag the sources, and puts a [`LatencyDelay`] on each edge
/// that arrives early. Returns the processing order of the new graph.
fn compensate_latency(
    nodes: &mut Vec<Entry>,
    edges: &mut Vec<(usize, usize)>,
    routes: &mut Vec<Route>,
    order: Vec<usize>,
    previous: Option<&Previous>,
) -> Vec<usize> {
    let n = nodes.len();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(f, t) in edges.iter() {
        preds[t].push(f);
    }
    let mut arrives = vec![0usize; n];
    let mut leaves = vec![0usize; n];
    for &i in &order {
        arrives[i] = preds[i].iter().map(|&p| leaves[p]).max().unwrap_or(0);
        leaves[i] = arrives[i] + nodes[i].node.latency();
    }
    let mut inserted = false;
    for e in 0..edges.len() {
        let (from, to) = edges[e];
        let lag = arrives[to] - leaves[from];
        if lag == 0 {
            continue;
        }
        let delay = nodes.len();
        let route = routes[e];
        let name = if route.from == 0 && route.to == 0 {
            format!("{} -> {} (latency {lag})", nodes[from].name, nodes[to].name)
        } else {
            // Two edges between the same nodes on other ports get delays of their own.
            format!(
                "{} -> {} (channels {}..{} -> {}.., latency {lag})",
                nodes[from].name,
                nodes[to].name,
                route.from,
                route.from + route.channels,
                route.to
            )
        };
        // The same edge delayed by the same length before the edit: keep its contents, so
        // that the path it aligns plays on without a gap.
        let (node, keep) = implicit(&name, LatencyDelay::new(route.channels, lag), previous);
        nodes.push(Entry { name, node, keep });
        edges[e] = (from, delay);
        routes[e] = Route { to: 0, ..route };
        edges.push((delay, to));
        routes.push(Route { from: 0, ..route });
        inserted = true;
    }
    if inserted {
        topological_order(nodes.len(), edges).expect("a delay on an edge keeps the graph acyclic")
    } else {
        order
    }
}

/// A fixed delay of whole frames that compile puts on an edge arriving early; it reports
/// its delay as its latency, so the totals stay right.
struct LatencyDelay {
    channels: usize,
    frames: usize,
    /// One line of `frames` samples per channel; `pos` is the oldest sample of each.
    lines: Vec<f32>,
    pos: usize,
}

impl LatencyDelay {
    fn new(channels: usize, frames: usize) -> Self {
        Self {
            channels,
            frames,
            lines: crate::prefaulted(channels * frames),
            pos: 0,
        }
    }
}

impl Node for LatencyDelay {
    fn input_channels(&self) -> usize {
        self.channels
    }

    fn output_channels(&self) -> usize {
        self.channels
    }

    fn process(&mut self, ctx: &ProcessContext, input: AudioRef<'_>, mut output: AudioMut<'_>) {
        for c in 0..self.channels {
            let line = &mut self.lines[c * self.frames..(c + 1) * self.frames];
            let mut pos = self.pos;
            for (o, &i) in output.channel_mut(c).iter_mut().zip(input.channel(c)) {
                *o = line[pos];
                line[pos] = i;
                pos += 1;
                if pos == self.frames {
                    pos = 0;
                }
            }
        }
        self.pos = (self.pos + ctx.frames) % self.frames;
    }

    fn latency(&self) -> usize {
        self.frames
    }
}

/// Kahn's algorithm, ready nodes taken in first-in first-out order so the result depends
/// only on the order nodes and edges were added. On a cycle, returns the nodes on one.
fn topological_order(n: usize, edges: &[(usize, usize)]) -> Result<Vec<usize>, Vec<usize>> {
    let mut indegree = vec![0usize; n];
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(f, t) in edges {
        indegree[t] += 1;
        succ[f].push(t);
    }
    let mut ready: VecDeque<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop_front() {
        order.push(i);
        for &s in &succ[i] {
            indegree[s] -= 1;
            if indegree[s] == 0 {
                ready.push_back(s);
            }
        }
    }
    if order.len() == n {
        return Ok(order);
    }
    // Every unsorted node still has an unsorted predecessor, so walking predecessors
    // backwards from any of them must revisit a node: that loop is a cycle.
    let mut pred_in_rest = vec![usize::MAX; n];
    for &(f, t) in edges {
        if indegree[t] > 0 && indegree[f] > 0 && pred_in_rest[t] == usize::MAX {
            pred_in_rest[t] = f;
        }
    }
    let start = (0..n)
        .find(|&i| indegree[i] > 0)
        .expect("some node is unsorted");
    let mut seen = vec![usize::MAX; n];
    let mut walk = Vec::new();
    let mut cur = start;
    while seen[cur] == usize::MAX {
        seen[cur] = walk.len();
        walk.push(cur);
        cur = pred_in_rest[cur];
    }
    let mut cycle = walk[seen[cur]..].to_vec();
    cycle.reverse();
    Err(cycle)
}

pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycle_is_reported_in_edge_order() {
        let edges = [(0, 1), (1, 2), (2, 0), (2, 3)];
        let cycle = topological_order(4, &edges).unwrap_err();
        assert_eq!(cycle.len(), 3);
        for w in 0..3 {
            let (f, t) = (cycle[w], cycle[(w + 1) % 3]);
            assert!(edges.contains(&(f, t)), "{f}->{t} not an edge of {cycle:?}");
        }
    }

    #[test]
    fn self_loop_is_a_cycle() {
        assert_eq!(topological_order(2, &[(1, 1)]).unwrap_err(), vec![1]);
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "ab"), 2);
    }
}
