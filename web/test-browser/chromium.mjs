// How the browser tests and the browser benchmark start Chromium: Debian's package (or
// CHROMIUM=...), headless without muting audio, AudioWorklet allowed to start without a gesture.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

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

/**
 * Chromium with these flags and a fresh profile in a temporary directory (a persistent
 * context is what gives a fresh profile). `close()` closes the browser, then removes the
 * profile, also when closing fails.
 */
export async function launchChromium() {
  const profile = mkdtempSync(join(tmpdir(), "downbeat-chromium-"));
  const remove = () => rmSync(profile, { recursive: true, force: true });
  let browser;
  try {
    browser = await chromium.launchPersistentContext(profile, { executablePath: EXECUTABLE, headless: false, args: CHROMIUM_ARGS });
  } catch (e) {
    remove();
    throw e;
  }
  const close = async () => {
    try {
      await browser.close();
    } finally {
      remove();
    }
  };
  return { browser, close };
}
