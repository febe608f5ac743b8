//! [`OsError`]: an operating system's error number as a typed, comparable value.

use std::fmt;

/// An operating-system error number, kept as a value so that reports stay `Clone` and `Eq`;
/// it prints as the system's message for it.
///
/// ```
/// let e = downbeat_rt::OsError(1);
/// # #[cfg(target_os = "linux")]
/// assert!(e.to_string().contains("Operation not permitted"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OsError(pub i32);

impl OsError {
    /// The calling thread's last error (`errno`).
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub(crate) fn last() -> Self {
        Self(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

impl fmt::Display for OsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        std::io::Error::from_raw_os_error(self.0).fmt(f)
    }
}

impl std::error::Error for OsError {}
