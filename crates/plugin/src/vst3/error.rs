//! [`Vst3Error`]: why a VST3 plugin could not be loaded, built or saved.

use std::fmt;
use std::path::PathBuf;

/// Why a `vst3` node could not be made; every variant names the bundle.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Vst3Error {
    /// No file or folder at the path.
    MissingFile {
        /// The bundle's path as given.
        path: PathBuf,
    },
    /// The bundle holds no library for this machine (`Contents/x86_64-linux/NAME.so`).
    NoLibrary {
        /// The bundle.
        path: PathBuf,
        /// The library looked for.
        library: PathBuf,
    },
    /// The library could not be loaded, or is not a VST3 module (no `GetPluginFactory`).
    Load {
        /// The bundle.
        path: PathBuf,
        /// What the loader said.
        reason: String,
    },
    /// No audio processor class with that name or id.
    UnknownClass {
        /// The bundle.
        path: PathBuf,
        /// The `id` asked for.
        id: String,
        /// The audio processor classes the bundle holds, by name.
        available: Vec<String>,
    },
    /// The bundle holds several audio processor classes and no `id` said which.
    ClassNeeded {
        /// The bundle.
        path: PathBuf,
        /// The classes it holds, by name.
        available: Vec<String>,
    },
    /// The plugin refused a step of its set-up.
    Plugin {
        /// The bundle.
        path: PathBuf,
        /// The class's name.
        name: String,
        /// The step and the plugin's result.
        reason: String,
    },
    /// A state file could not be read, or the plugin refused it.
    State {
        /// The bundle.
        path: PathBuf,
        /// The state file.
        file: PathBuf,
        /// Why.
        reason: String,
    },
}

impl Vst3Error {
    /// The project-file key the error is about (`path`, `id` or `state`).
    pub fn key(&self) -> &'static str {
        match self {
            Vst3Error::UnknownClass { .. } | Vst3Error::ClassNeeded { .. } => "id",
            Vst3Error::State { .. } => "state",
            _ => "path",
        }
    }
}

impl fmt::Display for Vst3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Vst3Error::MissingFile { path } => {
                write!(f, "VST3 bundle `{}` does not exist", path.display())
            }
            Vst3Error::NoLibrary { path, library } => write!(
                f,
                "`{}` is not a VST3 bundle for this machine: it has no `{}`",
                path.display(),
                library.display()
            ),
            Vst3Error::Load { path, reason } => write!(
                f,
                "VST3 bundle `{}` cannot be loaded: {reason}",
                path.display()
            ),
            Vst3Error::UnknownClass {
                path,
                id,
                available,
            } => write!(
                f,
                "VST3 bundle `{}` has no audio processor `{id}`; it has: {}",
                path.display(),
                available.join(", ")
            ),
            Vst3Error::ClassNeeded { path, available } => write!(
                f,
                "VST3 bundle `{}` holds several audio processors: say which with `id` ({})",
                path.display(),
                available.join(", ")
            ),
            Vst3Error::Plugin { path, name, reason } => {
                write!(f, "VST3 plugin `{name}` in `{}`: {reason}", path.display())
            }
            Vst3Error::State { path, file, reason } => write!(
                f,
                "VST3 bundle `{}`: state `{}`: {reason}",
                path.display(),
                file.display()
            ),
        }
    }
}

impl std::error::Error for Vst3Error {}
