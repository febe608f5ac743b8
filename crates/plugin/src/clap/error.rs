//! Why a CLAP plugin could not be loaded, instantiated or activated.

use std::fmt;
use std::path::PathBuf;

/// A CLAP plugin that cannot become a node. Every variant names the file, and the plugin id
/// when one was involved, so the message says what to fix and where.
#[derive(Clone, Debug, PartialEq)]
pub enum ClapError {
    /// No file at `path`.
    MissingFile {
        /// The path given.
        path: PathBuf,
    },
    /// The file exists but is not a loadable CLAP library (not a shared object, no
    /// `clap_entry` symbol, an incompatible CLAP version, an entry whose `init` failed).
    Load {
        /// The file.
        path: PathBuf,
        /// What the loader said.
        reason: String,
    },
    /// The library has no plugin factory.
    NoFactory {
        /// The file.
        path: PathBuf,
    },
    /// No id was given and the file holds several plugins (or none).
    IdNeeded {
        /// The file.
        path: PathBuf,
        /// The ids it holds.
        available: Vec<String>,
    },
    /// The file holds no plugin with this id.
    UnknownId {
        /// The file.
        path: PathBuf,
        /// The id asked for.
        id: String,
        /// The ids it holds.
        available: Vec<String>,
    },
    /// The plugin refused to be created, initialised or activated, or declares something
    /// the host does not support.
    Plugin {
        /// The file.
        path: PathBuf,
        /// The plugin's id.
        id: String,
        /// The step that failed and why.
        reason: String,
    },
    /// A `state = "FILE"` that could not be loaded into the plugin.
    State {
        /// The plugin file.
        path: PathBuf,
        /// The plugin's id.
        id: String,
        /// The state file.
        file: PathBuf,
        /// Why.
        reason: String,
    },
}

impl ClapError {
    /// The project-file key the error is about: `id` for a wrong or missing id, `state` for
    /// a state file that would not load, else `path`.
    pub fn key(&self) -> &'static str {
        match self {
            ClapError::IdNeeded { .. } | ClapError::UnknownId { .. } => "id",
            ClapError::State { .. } => "state",
            _ => "path",
        }
    }
}

fn ids(list: &[String]) -> String {
    if list.is_empty() {
        "it holds no plugin".to_string()
    } else {
        format!("it holds {}", list.join(", "))
    }
}

impl fmt::Display for ClapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClapError::MissingFile { path } => {
                write!(f, "CLAP plugin file {} does not exist", path.display())
            }
            ClapError::Load { path, reason } => write!(
                f,
                "{} cannot be loaded as a CLAP plugin: {reason}",
                path.display()
            ),
            ClapError::NoFactory { path } => write!(
                f,
                "{} is a CLAP library without a plugin factory",
                path.display()
            ),
            ClapError::IdNeeded { path, available } => write!(
                f,
                "{} needs an `id` naming the plugin to load ({})",
                path.display(),
                ids(available)
            ),
            ClapError::UnknownId {
                path,
                id,
                available,
            } => write!(
                f,
                "{} has no plugin with id \"{id}\" ({})",
                path.display(),
                ids(available)
            ),
            ClapError::State {
                path,
                id,
                file,
                reason,
            } => write!(
                f,
                "state file {} for CLAP plugin \"{id}\" in {}: {reason}",
                file.display(),
                path.display()
            ),
            ClapError::Plugin { path, id, reason } => {
                write!(f, "CLAP plugin \"{id}\" in {}: {reason}", path.display())
            }
        }
    }
}

impl std::error::Error for ClapError {}
