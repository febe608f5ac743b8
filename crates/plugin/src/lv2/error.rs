//! Why an LV2 plugin could not become a node.

use std::fmt;

/// Why an LV2 plugin could not be loaded, or a value could not be given to one of its ports.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Lv2Error {
    /// No installed plugin has this URI (`lv2ls` lists the installed ones).
    NotFound {
        /// The URI asked for.
        uri: String,
    },
    /// The plugin needs features this host does not provide.
    MissingFeatures {
        /// The plugin.
        uri: String,
        /// The feature URIs the plugin requires and Downbeat lacks.
        missing: Vec<String>,
    },
    /// A port the plugin does not let the host leave unconnected has a type Downbeat
    /// cannot feed.
    UnsupportedPort {
        /// The plugin.
        uri: String,
        /// The port's symbol.
        symbol: String,
        /// The port's classes, as URIs.
        classes: Vec<String>,
    },
    /// The plugin's own `instantiate` returned nothing.
    Instantiate {
        /// The plugin.
        uri: String,
    },
    /// The thread that does the plugin's worker requests (`worker:schedule`) could not be
    /// started: without it no request would ever be worked.
    WorkerThread {
        /// The plugin.
        uri: String,
        /// Why the system refused the thread.
        reason: String,
    },
    /// The plugin has no control input with this symbol.
    UnknownControl {
        /// The symbol given.
        symbol: String,
        /// The symbols the plugin has.
        valid: Vec<String>,
    },
    /// A state could not be saved or restored (an unreadable file, a state of another
    /// plugin, a plugin that refused).
    State {
        /// The plugin.
        uri: String,
        /// What went wrong, naming the file when there is one.
        message: String,
    },
    /// `preset = "NAME"` names no preset of the plugin.
    UnknownPreset {
        /// The plugin.
        uri: String,
        /// The name given.
        name: String,
        /// The labels of the plugin's presets.
        presets: Vec<String>,
    },
    /// A value a control port does not accept.
    BadValue {
        /// The port's symbol.
        symbol: String,
        /// What is wrong and what would be accepted.
        message: String,
    },
}

impl fmt::Display for Lv2Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lv2Error::NotFound { uri } => write!(
                f,
                "no LV2 plugin <{uri}> is installed (`lv2ls` lists the installed ones; \
                 LV2_PATH says where to look)"
            ),
            Lv2Error::MissingFeatures { uri, missing } => write!(
                f,
                "LV2 plugin <{uri}> requires features Downbeat does not provide: {}",
                missing.join(", ")
            ),
            Lv2Error::UnsupportedPort {
                uri,
                symbol,
                classes,
            } => write!(
                f,
                "LV2 plugin <{uri}>: port `{symbol}` ({}) must be connected, but Downbeat \
                 cannot feed that type of port",
                classes.join(", ")
            ),
            Lv2Error::Instantiate { uri } => {
                write!(f, "LV2 plugin <{uri}> failed to instantiate")
            }
            Lv2Error::WorkerThread { uri, reason } => write!(
                f,
                "LV2 plugin <{uri}>: cannot start its worker thread ({reason}); the plugin \
                 asks for the LV2 worker, whose requests would never be worked"
            ),
            Lv2Error::UnknownControl { symbol, valid } if valid.is_empty() => write!(
                f,
                "unknown parameter `{symbol}`: this plugin has no control inputs"
            ),
            Lv2Error::UnknownControl { symbol, valid } => write!(
                f,
                "unknown parameter `{symbol}`: the plugin's control inputs are {}",
                valid.join(", ")
            ),
            Lv2Error::State { uri, message } => write!(f, "LV2 plugin <{uri}>: {message}"),
            Lv2Error::UnknownPreset { uri, name, presets } if presets.is_empty() => write!(
                f,
                "unknown preset `{name}`: LV2 plugin <{uri}> has no presets"
            ),
            Lv2Error::UnknownPreset { uri, name, presets } => write!(
                f,
                "unknown preset `{name}`: the presets of LV2 plugin <{uri}> are {}",
                presets
                    .iter()
                    .map(|p| format!("\"{p}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Lv2Error::BadValue { symbol, message } => {
                write!(f, "parameter `{symbol}`: {message}")
            }
        }
    }
}

impl std::error::Error for Lv2Error {}
