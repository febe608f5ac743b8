//! Plugins on a machine with no display.
//!
//! Downbeat shows no plugin UI, but some plugins start a GUI toolkit when they are created
//! anyway: synthv1 makes a Qt application in its `instantiate`, and Qt, finding neither an
//! X11 nor a Wayland display, aborts the whole process. Qt has a platform that needs no
//! display, `offscreen`; [`offscreen_qt_if_headless`] chooses it when the machine has no
//! display and the user chose no platform, so such plugins load on a server or in CI.

/// The environment variable that picks Qt's platform plugin.
pub const QT_PLATFORM: &str = "QT_QPA_PLATFORM";

/// Whether the environment `var` gives names a display: neither `DISPLAY` nor
/// `WAYLAND_DISPLAY` is set to something non-empty.
///
/// ```
/// use downbeat_plugin::headless::has_display;
/// let env = |k: &str| (k == "WAYLAND_DISPLAY").then(|| "wayland-0".to_string());
/// assert!(has_display(env));
/// assert!(!has_display(|_| Some(String::new())));
/// ```
pub fn has_display(var: impl Fn(&str) -> Option<String>) -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|k| var(k).is_some_and(|v| !v.is_empty()))
}

/// Sets `QT_QPA_PLATFORM=offscreen` when the process has no display ([`has_display`]) and
/// `QT_QPA_PLATFORM` is not set, and says whether it did. Plugins created afterwards, and
/// processes started afterwards (an audit's children), inherit it; a user who set the
/// variable, even to an empty value, keeps it.
///
/// Call it at the start of `main`, before any thread is started: it changes the process's
/// environment, which another thread reading it at the same time could see half written.
///
/// ```
/// use downbeat_plugin::headless::{offscreen_qt_if_headless, QT_PLATFORM};
/// let chose = offscreen_qt_if_headless();
/// assert!(!chose || std::env::var(QT_PLATFORM).as_deref() == Ok("offscreen"));
/// ```
pub fn offscreen_qt_if_headless() -> bool {
    if has_display(|k| std::env::var(k).ok()) || std::env::var_os(QT_PLATFORM).is_some() {
        return false;
    }
    std::env::set_var(QT_PLATFORM, "offscreen");
    true
}
