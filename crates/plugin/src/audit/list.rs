//! What plugins a CLAP file, a VST3 bundle or an LV2 bundle holds, without creating any of
//! them: how
//! `downbeat audit DIR` finds one plugin per row (it calls these in a child process, since
//! opening a CLAP library runs the plugin's code).

use std::fmt;
#[cfg(any(feature = "clap", feature = "lv2", feature = "vst3"))]
use std::path::Path;
use std::path::PathBuf;

/// Why a file or bundle's plugins could not be listed.
#[derive(Clone, Debug, PartialEq)]
pub enum ListError {
    /// The CLAP file cannot be opened (see [`crate::clap::ClapError`]).
    #[cfg(feature = "clap")]
    Clap(crate::clap::ClapError),
    /// The VST3 bundle cannot be opened (see [`crate::vst3::Vst3Error`]).
    #[cfg(feature = "vst3")]
    Vst3(crate::vst3::Vst3Error),
    /// No folder at this path, or one lilv cannot read as a bundle.
    NotABundle {
        /// The path given.
        path: PathBuf,
    },
    /// The file or bundle declares no plugin.
    Empty {
        /// The path given.
        path: PathBuf,
    },
}

impl fmt::Display for ListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "clap")]
            ListError::Clap(e) => e.fmt(f),
            #[cfg(feature = "vst3")]
            ListError::Vst3(e) => e.fmt(f),
            ListError::NotABundle { path } => {
                write!(f, "{}: not an LV2 bundle (a folder)", path.display())
            }
            ListError::Empty { path } => write!(f, "{}: declares no plugin", path.display()),
        }
    }
}

impl std::error::Error for ListError {}

/// The ids of the plugins in the CLAP file at `path`, in the factory's order. Loads the
/// library and reads its factory (running the library's entry, which is plugin code), but
/// creates no plugin.
///
/// ```no_run
/// use downbeat_plugin::audit::list::clap_ids;
/// for id in clap_ids("/usr/lib/clap/ZamComp.clap".as_ref())? {
///     println!("{id}");
/// }
/// # Ok::<(), downbeat_plugin::audit::list::ListError>(())
/// ```
///
/// # Errors
/// [`ListError::Clap`] when the file is missing or not a CLAP library, [`ListError::Empty`]
/// when its factory lists no plugin.
#[cfg(feature = "clap")]
pub fn clap_ids(path: &Path) -> Result<Vec<String>, ListError> {
    use crate::clap::{ClapError, ClapNode};
    // The CLAP host's one public way in is `ClapNode::load`: asked for an id no plugin has
    // (CLAP ids are never empty), it stops after reading the factory and names the ids
    // there, before creating anything.
    match ClapNode::load(path, Some(""), 48000, 1) {
        Err(ClapError::UnknownId { available, .. }) if available.is_empty() => {
            Err(ListError::Empty {
                path: path.to_path_buf(),
            })
        }
        Err(ClapError::UnknownId { available, .. }) => Ok(available),
        Err(e) => Err(ListError::Clap(e)),
        Ok(node) => Ok(vec![node.info().id.clone()]),
    }
}

/// The names of the audio processor classes in the VST3 bundle at `bundle`, in the
/// factory's order. Loads the library and reads its factory (running the module's entry,
/// which is plugin code), but creates no plugin.
///
/// ```no_run
/// use downbeat_plugin::audit::list::vst3_classes;
/// assert_eq!(vst3_classes("/usr/lib/vst3/ZamComp.vst3".as_ref())?, ["ZamComp"]);
/// # Ok::<(), downbeat_plugin::audit::list::ListError>(())
/// ```
///
/// # Errors
/// [`ListError::Vst3`] when the bundle is missing or holds no VST3 module,
/// [`ListError::Empty`] when its factory lists no audio processor.
#[cfg(feature = "vst3")]
pub fn vst3_classes(bundle: &Path) -> Result<Vec<String>, ListError> {
    use crate::vst3::{Vst3Error, Vst3Node};
    // As for CLAP: asked for a class no plugin has (names are never empty), the host stops
    // after reading the factory and names the classes there, before creating anything.
    match Vst3Node::load(bundle, Some(""), 48000, 1, None) {
        Err(Vst3Error::UnknownClass { available, .. }) if available.is_empty() => {
            Err(ListError::Empty {
                path: bundle.to_path_buf(),
            })
        }
        Err(Vst3Error::UnknownClass { available, .. }) => Ok(available),
        Err(e) => Err(ListError::Vst3(e)),
        Ok(node) => Ok(vec![node.info().name.clone()]),
    }
}

/// The URIs of the plugins the LV2 bundle (a `NAME.lv2` folder) at `bundle` declares, read
/// from its Turtle files through lilv; no plugin code runs.
///
/// ```no_run
/// use downbeat_plugin::audit::list::lv2_uris;
/// let uris = lv2_uris("/usr/lib/lv2/avldrums.lv2".as_ref())?;
/// assert!(!uris.is_empty());
/// # Ok::<(), downbeat_plugin::audit::list::ListError>(())
/// ```
///
/// # Errors
/// [`ListError::NotABundle`] when `bundle` is not a folder, [`ListError::Empty`] when it
/// declares no plugin.
#[cfg(feature = "lv2")]
pub fn lv2_uris(bundle: &Path) -> Result<Vec<String>, ListError> {
    let not_a_bundle = || ListError::NotABundle {
        path: bundle.to_path_buf(),
    };
    let absolute = std::fs::canonicalize(bundle).map_err(|_| not_a_bundle())?;
    if !absolute.is_dir() {
        return Err(not_a_bundle());
    }
    // lilv wants a bundle's URI with its final slash.
    let mut dir = absolute.to_str().ok_or_else(not_a_bundle)?.to_string();
    if !dir.ends_with('/') {
        dir.push('/');
    }
    // A world of its own holding this bundle only: the installed ones are not listed.
    let world = lilv::World::new();
    let uri = world.new_file_uri(None, &dir);
    world.load_bundle(&uri);
    let mut uris: Vec<String> = world
        .plugins()
        .iter()
        .filter_map(|p| p.uri().as_uri().map(str::to_string))
        .collect();
    uris.sort();
    if uris.is_empty() {
        return Err(ListError::Empty {
            path: bundle.to_path_buf(),
        });
    }
    Ok(uris)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "clap")]
    #[test]
    fn a_file_that_is_not_a_library_is_a_clap_error() {
        let path = std::env::temp_dir().join(format!("not-a-plugin-{}.clap", std::process::id()));
        std::fs::write(&path, "not a shared object").unwrap();
        let err = clap_ids(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(
            matches!(err, ListError::Clap(crate::clap::ClapError::Load { .. })),
            "{err:?}"
        );
    }

    #[cfg(feature = "lv2")]
    #[test]
    fn a_folder_without_a_manifest_declares_no_plugin() {
        let dir = std::env::temp_dir().join(format!("empty-{}.lv2", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = lv2_uris(&dir).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(err, ListError::Empty { path: dir });
    }
}
