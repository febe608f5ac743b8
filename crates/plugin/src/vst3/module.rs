//! [`Module`]: a VST3 bundle's library, loaded, entered once and holding its factory;
//! [`main_calls`]: the lock every main-thread call of every VST3 plugin holds.
//!
//! A VST3 host has one main thread; plugins rely on it. DPF's modules, for one, keep their
//! factory and plugin descriptions in globals: a second `ModuleEntry`, a `ModuleExit` while
//! another node still uses the factory, or two threads asking the factory for its classes
//! at once crash them (seen as a SIGSEGV in `getClassInfo` when two tests loaded ZamComp
//! at once). Downbeat builds nodes on any thread, so it makes the calls one at a time
//! instead, and enters each library once however many nodes use it.

use std::cell::Cell;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

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

/// Held for every main-thread call of a VST3 plugin (creating, setting up, saving, tearing
/// down, restarting, releasing), so that no two are made at once in the process. Never on
/// the audio thread: `process` and `setProcessing` do not take it.
pub(crate) struct MainCalls(Option<MutexGuard<'static, ()>>);

static MAIN: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether this thread holds [`MAIN`]: taking it again is then a no-op, so that a load
    /// that fails can drop its module (which takes the lock) while holding it.
    static HELD: Cell<bool> = const { Cell::new(false) };
}

/// Takes the main-thread lock, or nothing when this thread holds it already.
pub(crate) fn main_calls() -> MainCalls {
    if HELD.get() {
        return MainCalls(None);
    }
    // A panic while holding it leaves no state behind that the lock protects.
    let guard = MAIN.lock().unwrap_or_else(PoisonError::into_inner);
    HELD.set(true);
    MainCalls(Some(guard))
}

impl Drop for MainCalls {
    fn drop(&mut self) {
        if self.0.is_some() {
            HELD.set(false);
        }
    }
}

/// The libraries entered, by their canonical path. Changed only under [`MAIN`].
static LOADED: Mutex<Vec<(PathBuf, Arc<Library>)>> = Mutex::new(Vec::new());

/// A library, entered, with its factory. Exited when dropped.
struct Library {
    /// Released in `drop`, before `ModuleExit`.
    factory: Option<ComPtr<IPluginFactory>>,
    exit: Option<unsafe extern "system" fn() -> bool>,
    _library: libloading::Library,
}

// SAFETY: the factory is called only under `MAIN` (by `Vst3Node::load`, which holds it), so
// never from two threads at once; `Library` only moves between threads inside `Arc`s.
unsafe impl Send for Library {}
// SAFETY: as for Send.
unsafe impl Sync for Library {}

impl Drop for Library {
    fn drop(&mut self) {
        drop(self.factory.take());
        if let Some(exit) = self.exit {
            // SAFETY: called once per entry, after every object made from the module is
            // released (the instances hold the module), under `MAIN` (see `Module`'s
            // drop), and before the library is unloaded.
            unsafe {
                exit();
            }
        }
    }
}

/// A node's share of a loaded VST3 module. The library is entered when the first share is
/// made and exited and unloaded when the last one is dropped.
pub(crate) struct Module {
    library: Option<Arc<Library>>,
}

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
    /// A share of the bundle at `path` (a `.vst3` folder, or the library itself): loaded,
    /// its `ModuleEntry` called and its factory taken, unless another node holds it already.
    /// `_main` proves the caller holds the main-thread lock.
    pub(crate) fn load(path: &Path, _main: &MainCalls) -> Result<Self, Vst3Error> {
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
        let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, library)) = loaded.iter().find(|(p, _)| *p == absolute) {
            return Ok(Self {
                library: Some(library.clone()),
            });
        }
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
            let library = Arc::new(Library {
                factory: Some(factory),
                exit,
                _library: lib,
            });
            loaded.push((absolute, library.clone()));
            Ok(Self {
                library: Some(library),
            })
        }
    }

    /// The module's factory. Call it only under the main-thread lock.
    pub(crate) fn factory(&self) -> &ComPtr<IPluginFactory> {
        self.library
            .as_ref()
            .and_then(|l| l.factory.as_ref())
            .expect("the factory lives until the module is dropped")
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        let _main = main_calls();
        let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
        drop(self.library.take());
        // The registry's own reference is the last one of a library no node shares: exit it
        // now, under the lock, so that no new node enters it in between.
        loaded.retain(|(_, l)| Arc::strong_count(l) > 1);
    }
}
