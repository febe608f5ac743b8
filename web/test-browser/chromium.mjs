// How the browser tests and the browser benchmark start Chromium: Debian's package (or
// CHROMIUM=...), headless without muting audio, AudioWorklet allowed to start without a gesture.

/** The Chromium binary. */
export const EXECUTABLE = process.env.CHROMIUM ?? "/usr/bin/chromium";

/**
 * Flags for AudioWorklet + SharedArrayBuffer, headless, without a sound card. Launch with
 * playwright's `headless: false`: its own headless mode adds --mute-audio, and --headless=new
 * here is what makes it headless. The background-networking flags keep Chromium from dialing
 * out of a closed network.
 */
export const CHROMIUM_ARGS = [
  "--headless=new",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
  "--autoplay-policy=no-user-gesture-required",
];
