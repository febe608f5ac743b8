// Where the AudioWorklet thread's time goes on the Karplus-Strong stress page, in headless
// Chromium: V8's sampling profiler attached to the worklet itself (a `worklet` target of the
// DevTools protocol), not to the page.
//
//   node bench/worklet-profile.mjs [--mode wasm|ring|postmessage] [--strings 2500]
//        [--seconds 8] [--interval-us 200] [--out profile.cpuprofile]
//
// Prints the share of samples the thread spent idle (its budget left) and the functions with
// the most self time. Wasm functions show as `wasm-function[N]` unless the module was built
// with its name section (`bash packages/engine/scripts/build-wasm.sh --names`; build it again
// without `--names` afterwards). `--out` writes the profile for Chrome DevTools. Nothing is asserted: this is a
// measuring tool, and docs/BENCHMARKS.md quotes what it printed.

import { writeFileSync } from "node:fs";
import { chromium } from "playwright-core";
import { startServer } from "../demo/serve.mjs";
import { CHROMIUM_ARGS, EXECUTABLE } from "../test-browser/chromium.mjs";

const args = process.argv.slice(2);
function opt(name, dflt) {
  const i = args.indexOf(name);
  if (i < 0) return dflt;
  if (i + 1 >= args.length) throw new Error(`${name} needs a value`);
  return args[i + 1];
}
const MODES = ["wasm", "ring", "postmessage"];
const mode = opt("--mode", "wasm");
if (!MODES.includes(mode)) throw new Error(`--mode ${mode}: expected one of ${MODES.join(", ")}`);
const strings = Number(opt("--strings", 2500));
const seconds = Number(opt("--seconds", 8));
const interval = Number(opt("--interval-us", 200));
for (const [name, v] of [["--strings", strings], ["--seconds", seconds], ["--interval-us", interval]]) {
  if (!(v > 0)) throw new Error(`${name}: expected a positive number`);
}
const out = opt("--out", null);

const server = await startServer({ port: 0 });
// Not playwright's headless mode, which adds --mute-audio: see test-browser/chromium.mjs.
const browser = await chromium.launch({ executablePath: EXECUTABLE, headless: false, args: CHROMIUM_ARGS });
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);

  // Playwright's CDP session cannot address a child session directly, so the worklet is
  // attached unflattened and spoken to through Target.sendMessageToTarget.
  let worklet = null;
  const pending = new Map();
  let nextId = 1;
  cdp.on("Target.attachedToTarget", (e) => {
    if (e.targetInfo.type === "worklet") worklet = e.sessionId;
  });
  cdp.on("Target.receivedMessageFromTarget", (e) => {
    const m = JSON.parse(e.message);
    const done = pending.get(m.id);
    if (!done) return;
    pending.delete(m.id);
    if (m.error) done.reject(new Error(`${m.error.message} (${m.error.code})`));
    else done.resolve(m.result);
  });
  const send = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      cdp.send("Target.sendMessageToTarget", { sessionId: worklet, message: JSON.stringify({ id, method, params }) }).catch(reject);
    });
  await cdp.send("Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });

  const q = new URLSearchParams({ mode, strings, strumMs: 200, auto: 1, autostart: 1 });
  await page.goto(new URL(`/?${q}`, server.url).href);
  await page.waitForFunction(() => window.demoStats.running || window.demoStats.error, null, { timeout: 60000 });
  const error = await page.evaluate(() => window.demoStats.error);
  if (error) throw new Error(`the page failed: ${error}`);
  await page.waitForTimeout(3000); // past start-up and the first strums
  if (!worklet) throw new Error("Chromium attached no worklet target to the page");

  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval });
  await send("Profiler.start");
  await page.waitForTimeout(seconds * 1000);
  const { profile } = await send("Profiler.stop");
  if (out) writeFileSync(out, JSON.stringify(profile));

  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  for (const id of profile.samples) {
    const f = nodes.get(id).callFrame;
    const key = `${f.functionName || "(anonymous)"} ${f.url.split("/").pop()}`.trim();
    self.set(key, (self.get(key) ?? 0) + 1);
  }
  const total = profile.samples.length;
  const idle = self.get("(idle)") ?? 0;
  console.log(`worklet thread, mode ${mode}, ${strings} strings, ${seconds} s, ${total} samples every ${interval} us`);
  console.log(`busy ${((100 * (total - idle)) / total).toFixed(1)}%, idle ${((100 * idle) / total).toFixed(1)}%`);
  for (const [key, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 12)) {
    if (key !== "(idle)") console.log(`${((100 * n) / total).toFixed(1).padStart(6)}%  ${key}`);
  }
} finally {
  await browser.close();
  await server.close();
}
