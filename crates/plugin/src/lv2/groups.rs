//! How a plugin's audio ports become the node's named [`Port`](downbeat_graph::Port)s.
//!
//! LV2 says which audio ports belong together with the port-groups extension: a port names
//! its group with `pg:group`, a plugin names its main input and output groups with
//! `pg:mainInput` and `pg:mainOutput`, and a group that feeds a detector rather than the
//! signal path says `pg:sideChainOf`; a single port says the same with the core port
//! property `lv2:isSideChain`. On each side (inputs, outputs) the node makes:
//!
//! * `main`: the main group (`pg:mainInput`/`pg:mainOutput`) together with the ports in no
//!   group that are not side chains. A plugin that names no main group but has no such
//!   ungrouped ports either (Dragonfly's reverbs put every audio port in one group) gets
//!   its first group that is not a side chain as `main`, so that an edge naming no port
//!   still reaches the signal path.
//! * one port per other group (a side chain like LSP's `sidechain_in`, a drum kit's
//!   `Cymbals` outputs), named by the group's `lv2:symbol` (lilv derives one from the
//!   group's URI when it has none);
//! * one port per side-chain port in no group (zam-plugins' and Ardour's
//!   `lv2_sidechain_in`), named by the port's symbol.
//!
//! A plugin without port groups or side chains so gets one `main` port per side, every
//! channel in it, as before ports existed.
//!
//! The ports are in the order of their lowest port index, and each port's channels in
//! port-index order. The node lays its channels out in that order, so each port is a
//! contiguous range of channels; for every plugin whose groups are contiguous in index order
//! (all those packaged in Debian we looked at) that is plain port-index order, the layout the
//! node had before it had ports.
//!
//! Names are made usable in an edge (`"comp:sidechain_in"`): `:`, `@` and white space become
//! `_` (LV2 symbols have none, but a derived one might), an empty name becomes `port<index>`,
//! and a name already taken on the same side (`main` is always taken) gets `_2`, `_3`, ….

use super::node::{PluginInfo, PortInfo};
use super::port::PortKind;

/// The port group an audio port belongs to (`pg:group`), as read from the plugin's data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortGroup {
    /// The group's identity: its URI, or the Turtle token of a blank node.
    pub id: String,
    /// The group's `lv2:symbol` (or one lilv derives from its URI); empty when neither.
    pub symbol: String,
    /// Whether the group is a side chain (`pg:sideChainOf` another group).
    pub side_chain: bool,
}

/// One of the node's ports on one side: its name and the plugin's audio ports that make it,
/// in channel order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AudioGroup {
    /// The port's name in the graph (`main`, `sidechain_in`, …).
    pub name: String,
    /// The plugin's port indices, one per channel, in channel order.
    pub ports: Vec<usize>,
}

/// What decides which node port a plugin port joins.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Key {
    Main,
    Group(String),
    Port(usize),
}

fn is_side_chain(p: &PortInfo) -> bool {
    p.side_chain || p.group.as_ref().is_some_and(|g| g.side_chain)
}

/// The node ports of one side: `kind` is [`PortKind::AudioIn`] or [`PortKind::AudioOut`]
/// (any other kind gives no ports). See the [module](self) for the rules.
///
/// ```no_run
/// use downbeat_plugin::lv2::groups::{audio_groups, AudioGroup};
/// use downbeat_plugin::lv2::port::PortKind;
/// use downbeat_plugin::lv2::PluginInfo;
///
/// // LSP's sidechain compressor: in_l, in_r (main group), sc_l, sc_r (its side chain).
/// let info = PluginInfo::find("http://lsp-plug.in/plugins/lv2/sc_compressor_stereo", 48000)?;
/// let inputs = audio_groups(&info, PortKind::AudioIn);
/// assert_eq!(inputs[0], AudioGroup { name: "main".into(), ports: vec![0, 1] });
/// assert_eq!(inputs[1], AudioGroup { name: "sidechain_in".into(), ports: vec![4, 5] });
/// # Ok::<(), downbeat_plugin::lv2::Lv2Error>(())
/// ```
pub fn audio_groups(info: &PluginInfo, kind: PortKind) -> Vec<AudioGroup> {
    let designated = match kind {
        PortKind::AudioIn => info.main_input.as_deref(),
        PortKind::AudioOut => info.main_output.as_deref(),
        _ => return Vec::new(),
    };
    let mut ports: Vec<&PortInfo> = info.ports.iter().filter(|p| p.kind == kind).collect();
    ports.sort_by_key(|p| p.index);
    let group_of = |p: &PortInfo| p.group.as_ref().map(|g| g.id.clone());
    // The main group: the one the plugin names, if any of these ports is in it; else, when
    // no ungrouped port carries the signal, the first group that is not a side chain.
    let main_group = designated
        .filter(|m| ports.iter().any(|p| group_of(p).as_deref() == Some(*m)))
        .map(str::to_string)
        .or_else(|| {
            if ports.iter().any(|p| p.group.is_none() && !is_side_chain(p)) {
                None
            } else {
                ports
                    .iter()
                    .find(|p| p.group.is_some() && !is_side_chain(p))
                    .and_then(|p| group_of(p))
            }
        });
    let mut keyed: Vec<(Key, String, Vec<usize>)> = Vec::new();
    for p in ports {
        let (key, name) = match &p.group {
            Some(g) if Some(&g.id) == main_group.as_ref() => (Key::Main, String::new()),
            Some(g) => (Key::Group(g.id.clone()), g.symbol.clone()),
            None if p.side_chain => (Key::Port(p.index), p.symbol.clone()),
            None => (Key::Main, String::new()),
        };
        match keyed.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, _, list)) => list.push(p.index),
            None => keyed.push((key, name, vec![p.index])),
        }
    }
    let mut taken = vec![downbeat_graph::Port::MAIN.to_string()];
    keyed
        .into_iter()
        .map(|(key, name, ports)| {
            let name = if key == Key::Main {
                downbeat_graph::Port::MAIN.to_string()
            } else {
                unique(&sanitize(&name, ports[0]), &mut taken)
            };
            AudioGroup { name, ports }
        })
        .collect()
}

/// A name usable in an edge: `:` (which separates node and port), `@` and white space
/// replaced by `_`; `port<index>` when empty.
fn sanitize(name: &str, index: usize) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c == ':' || c == '@' || c.is_whitespace() {
                '_'
            } else {
                c
            }
        })
        .collect();
    if s.is_empty() {
        format!("port{index}")
    } else {
        s
    }
}

/// `name`, or `name_2`, `name_3`, … when taken; the result is added to `taken`.
fn unique(name: &str, taken: &mut Vec<String>) -> String {
    let mut candidate = name.to_string();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{name}_{n}");
        n += 1;
    }
    taken.push(candidate.clone());
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(index: usize, kind: PortKind, symbol: &str, group: Option<(&str, bool)>) -> PortInfo {
        PortInfo {
            index,
            kind,
            optional: false,
            symbol: symbol.into(),
            classes: Vec::new(),
            control: None,
            group: group.map(|(id, side_chain)| PortGroup {
                id: format!("urn:g#{id}"),
                symbol: id.into(),
                side_chain,
            }),
            side_chain: false,
        }
    }

    fn info(ports: Vec<PortInfo>, main_in: Option<&str>, main_out: Option<&str>) -> PluginInfo {
        PluginInfo {
            uri: "urn:test".into(),
            name: "test".into(),
            ports,
            required_features: Vec::new(),
            latency_port: None,
            wants_worker: false,
            main_input: main_in.map(|m| format!("urn:g#{m}")),
            main_output: main_out.map(|m| format!("urn:g#{m}")),
        }
    }

    fn names(groups: &[AudioGroup]) -> Vec<(&str, &[usize])> {
        groups
            .iter()
            .map(|g| (g.name.as_str(), g.ports.as_slice()))
            .collect()
    }

    use PortKind::{AudioIn, AudioOut, ControlIn};

    #[test]
    fn no_groups_one_main_port_per_side() {
        let i = info(
            vec![
                port(0, AudioIn, "l", None),
                port(1, ControlIn, "gain", None),
                port(2, AudioIn, "r", None),
                port(3, AudioOut, "out", None),
            ],
            None,
            None,
        );
        assert_eq!(
            names(&audio_groups(&i, AudioIn)),
            [("main", &[0usize, 2][..])]
        );
        assert_eq!(
            names(&audio_groups(&i, AudioOut)),
            [("main", &[3usize][..])]
        );
        assert!(audio_groups(&i, ControlIn).is_empty());
    }

    /// LSP's layout: a designated main group and a side-chain group.
    #[test]
    fn a_side_chain_group_is_named_by_its_symbol() {
        let i = info(
            vec![
                port(0, AudioIn, "in_l", Some(("stereo_in", false))),
                port(1, AudioIn, "in_r", Some(("stereo_in", false))),
                port(2, AudioOut, "out_l", Some(("stereo_out", false))),
                port(3, AudioOut, "out_r", Some(("stereo_out", false))),
                port(4, AudioIn, "sc_l", Some(("sidechain_in", true))),
                port(5, AudioIn, "sc_r", Some(("sidechain_in", true))),
            ],
            Some("stereo_in"),
            Some("stereo_out"),
        );
        assert_eq!(
            names(&audio_groups(&i, AudioIn)),
            [("main", &[0usize, 1][..]), ("sidechain_in", &[4, 5][..])]
        );
        assert_eq!(
            names(&audio_groups(&i, AudioOut)),
            [("main", &[2usize, 3][..])]
        );
    }

    /// zam-plugins' and Ardour's layout: ungrouped ports, one `lv2:isSideChain`, placed
    /// before or after the main input.
    #[test]
    fn an_ungrouped_side_chain_port_is_named_by_its_symbol() {
        let mut sc = port(0, AudioIn, "lv2_sidechain_in", None);
        sc.side_chain = true;
        let i = info(vec![sc, port(1, AudioIn, "in", None)], None, None);
        assert_eq!(
            names(&audio_groups(&i, AudioIn)),
            [("lv2_sidechain_in", &[0usize][..]), ("main", &[1][..])]
        );
    }

    /// A side-chain port between the main ports: moved after them, so that `main` is one
    /// range of channels.
    #[test]
    fn interleaved_ports_are_made_contiguous() {
        let i = info(
            vec![
                port(0, AudioIn, "l", Some(("in", false))),
                port(1, AudioIn, "sc", Some(("side chain:1", true))),
                port(2, AudioIn, "r", Some(("in", false))),
            ],
            Some("in"),
            None,
        );
        assert_eq!(
            names(&audio_groups(&i, AudioIn)),
            [("main", &[0usize, 2][..]), ("side_chain_1", &[1][..])]
        );
    }

    /// No designated main group, nothing ungrouped (Dragonfly): the first group that is
    /// not a side chain is `main`; other groups keep their names, made unique.
    #[test]
    fn without_a_designated_main_the_first_plain_group_is_main() {
        let i = info(
            vec![
                port(0, AudioOut, "a", Some(("sc", true))),
                port(1, AudioOut, "l", Some(("stereo", false))),
                port(2, AudioOut, "r", Some(("stereo", false))),
                port(3, AudioOut, "x", Some(("main", false))),
                port(4, AudioOut, "y", Some(("", false))),
            ],
            None,
            None,
        );
        assert_eq!(
            names(&audio_groups(&i, AudioOut)),
            [
                ("sc", &[0usize][..]),
                ("main", &[1, 2][..]),
                ("main_2", &[3][..]),
                ("port4", &[4][..])
            ]
        );
    }

    /// avldrums' multi-output kits: ungrouped outputs and two named groups.
    #[test]
    fn ungrouped_plain_ports_are_main_beside_other_groups() {
        let i = info(
            vec![
                port(0, AudioOut, "out1", None),
                port(1, AudioOut, "out2", None),
                port(2, AudioOut, "out7", Some(("Cymbals", false))),
                port(3, AudioOut, "out8", Some(("Cymbals", false))),
            ],
            None,
            None,
        );
        assert_eq!(
            names(&audio_groups(&i, AudioOut)),
            [("main", &[0usize, 1][..]), ("Cymbals", &[2, 3][..])]
        );
    }
}
