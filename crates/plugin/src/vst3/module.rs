//! [`Module`]: a VST3 bundle's library, loaded, entered and holding its factory.

use std::ffi::c_void;
use std::path::{Path, PathBuf};

use vst3::ComPtr;
use vst3::Steinberg::IPluginFactory;

use super::error::Vst3Error;

/// The library's folder inside a bundle, for this machine.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const ARCH: &str = "x86_64-linux";
#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
const ARCH: &str = "aarch64-linux";
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
const ARCH: &str = "unsupported";

/// A loaded VST3 module. Instances made from its factory keep it (in an `Arc`): the library
/// is exited and unloaded only after the last of them is gone.
pub(crate) struct Module {
    /// Released in `drop`, before `ModuleExit`.
    factory: Option<ComPtr<IPluginFactory>>,
    exit: Option<unsafe extern "system" fn() -> bool>,
    _library: libloading::Library,
}

// SAFETY: the factory is only used on the thread that builds and drops nodes (their main
// thread); `Module` moves between threads inside nodes, never to be used on two at once.
unsafe impl Send for Module {}
// SAFETY: as for Send: shared references reach the factory only on the nodes' main thread.
unsafe impl Sync for Module {}

/// The library inside `bundle`: `Contents/<arch>/<bundle name>.so`.
pub(crate) fn library_of(bundle: &Path) -> PathBuf {
    let stem = bundle
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    bundle
        .join("Contents")
        .join(ARCH)
        .join(format!("{stem}.so"))
}

impl Module {
    /// Loads the bundle at `path` (a `.vst3` folder, or the library itself), calls its
    /// `ModuleEntry` and takes its factory.
    pub(crate) fn load(path: &Path) -> Result<Self, Vst3Error> {
        let err = |reason: String| Vst3Error::Load {
            path: path.to_path_buf(),
            reason,
        };
        if !path.exists() {
            return Err(Vst3Error::MissingFile {
                path: path.to_path_buf(),
            });
        }
        let library = if path.is_dir() {
            let library = library_of(path);
            if !library.is_file() {
                return Err(Vst3Error::NoLibrary {
                    path: path.to_path_buf(),
                    library,
                });
            }
            library
        } else {
            path.to_path_buf()
        };
        let absolute = std::fs::canonicalize(&library).map_err(|e| err(e.to_string()))?;
        // SAFETY: loading a library runs its initialisers; that is what hosting a plugin
        // means, and the user chose this bundle by naming it.
        let lib = unsafe { libloading::Library::new(&absolute) }.map_err(|e| err(e.to_string()))?;
        // SAFETY: the symbols' types are the VST3 SDK's (`ModuleEntry(void*)`,
        // `ModuleExit()`, `GetPluginFactory()`); a library exporting these names with other
        // types is not a VST3 module, and would break any host.
        unsafe {
            let entry = lib
                .get::<unsafe extern "system" fn(*mut c_void) -> bool>(b"ModuleEntry")
                .ok();
            let exit = lib
                .get::<unsafe extern "system" fn() -> bool>(b"ModuleExit")
                .ok()
                .map(|s| *s);
            let get = lib
                .get::<unsafe extern "system" fn() -> *mut IPluginFactory>(b"GetPluginFactory")
                .map_err(|_| err("not a VST3 module: it has no `GetPluginFactory`".into()))?;
            if let Some(entry) = entry {
                if !entry(std::ptr::null_mut()) {
                    return Err(err("its `ModuleEntry` failed".into()));
                }
            }
            let Some(factory) = ComPtr::from_raw(get()) else {
                if let Some(exit) = exit {
                    exit();
                }
                return Err(err("its `GetPluginFactory` returned no factory".into()));
            };
            Ok(Self {
                factory: Some(factory),
                exit,
                _library: lib,
            })
        }
    }

    /// The module's factory.
    pub(crate) fn factory(&self) -> &ComPtr<IPluginFactory> {
        self.factory
            .as_ref()
            .expect("the factory lives until the module is dropped")
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        drop(self.factory.take());
        if let Some(exit) = self.exit {
            // SAFETY: called once, after every object made from the module is released
            // (the instances hold the module) and before the library is unloaded.
            unsafe {
                exit();
            }
        }
    }
}
