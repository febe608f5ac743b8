//! How a plugin's names become Downbeat's: parameter names as project-file keys, audio
//! ports as node ports. One rule for every plugin format.

use downbeat_graph::Port;

/// Turns a plugin's parameter name (a CLAP name, a VST3 title) into a project-file key:
/// lower case, runs of anything but letters and digits become one `_`.
///
/// ```
/// use downbeat_plugin::naming::param_name;
/// assert_eq!(param_name("Gain"), "gain");
/// assert_eq!(param_name("Filter Cutoff (Hz)"), "filter_cutoff_hz");
/// ```
pub fn param_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// A parameter's key as [`param_name`] makes it, unless that is empty or `taken` (by a
/// parameter or meter of the same plugin listed before it): then `param_<id>` or
/// `<key>_<id>`, the plugin's own id keeping it unique and stable.
///
/// ```
/// use downbeat_plugin::naming::unique_param_name;
/// let taken = |n: &str| n == "gain";
/// assert_eq!(unique_param_name("Mix", 3, taken), "mix");
/// assert_eq!(unique_param_name("Gain", 7, taken), "gain_7");
/// assert_eq!(unique_param_name("", 9, taken), "param_9");
/// ```
pub fn unique_param_name(
    name: &str,
    id: impl std::fmt::Display,
    taken: impl Fn(&str) -> bool,
) -> String {
    let key = param_name(name);
    if key.is_empty() {
        format!("param_{id}")
    } else if taken(&key) {
        format!("{key}_{id}")
    } else {
        key
    }
}

/// The graph names of a plugin's audio ports (or buses) of one direction, given their names in
/// port order and the index of the main port: the main port is `main`; every other is its
/// name made a project-file key as [`param_name`] makes parameter names (lower case,
/// each run of anything but letters and digits one `_`, so no `:`, `@` or white space is
/// left), `port<N>` (N its position) when nothing is left, and `_2`, `_3`, … appended to a
/// name already taken on the same side (`main` always is).
///
/// ```
/// use downbeat_plugin::naming::port_names;
/// let names = ["Audio Input".to_string(), "Side Chain: L@R".into(), "".into(), "main".into()];
/// assert_eq!(port_names(&names, 0), ["main", "side_chain_l_r", "port2", "main_2"]);
/// ```
pub fn port_names(names: &[String], main: usize) -> Vec<String> {
    let mut taken = vec![Port::MAIN.to_string()];
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            if i == main {
                return Port::MAIN.to_string();
            }
            let base = match param_name(name) {
                n if n.is_empty() => format!("port{i}"),
                n => n,
            };
            let mut candidate = base.clone();
            let mut n = 2;
            while taken.contains(&candidate) {
                candidate = format!("{base}_{n}");
                n += 1;
            }
            taken.push(candidate.clone());
            candidate
        })
        .collect()
}
