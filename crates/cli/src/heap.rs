//! [`one_heap`]: every thread of the process allocates from glibc's main heap.

/// Makes glibc's `malloc` serve every thread from its main heap (`M_ARENA_MAX` = 1) instead
/// of giving each new thread a heap of its own. Called first thing by the binaries.
///
/// Why: CLAP plugins are created and activated on the CLAP main thread
/// (`downbeat_plugin::clap`), a thread of its own. With a heap of its own, what a plugin
/// allocates there comes from fresh pages, which the audio thread then touches first in
/// `process`: a page fault per page, in the plugin's first callbacks (seven in the test
/// plugins' transport recorder). From the main heap, which the program has used already,
/// the same allocations mostly reuse touched pages, as when plugins were made on the main
/// thread. The cost, threads contending for one heap's lock, does not reach the audio
/// thread, which never allocates.
pub fn one_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` with a documented option and value, before the process has other
    // threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
