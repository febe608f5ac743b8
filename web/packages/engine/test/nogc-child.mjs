// Run by nogc.test.mjs in a Node started with a 1 MiB young generation and --expose-gc: drives the worklet's
// per-quantum path (EngineCore.process on the real wasm engine, plus the main thread's control
// writes and meter reads) in a fake `process` loop and prints how many garbage collections
// started inside the measured loop, as JSON. argv[2] = "clean" or "allocating" (the second adds
// one small object per quantum, to prove the detector sees garbage that small).
import { readFileSync } from "node:fs";
import { PerformanceObserver } from "node:perf_hooks";
import { Controller, Meters } from "@downbeat/engine";
import { EngineCore } from "@downbeat/engine/core.js";
import { engineExports, loadProject, readTable } from "../dist/abi.js";
import { processorOptions } from "./util.mjs";

const mode = process.argv[2];
const wasm = process.env.DOWNBEAT_WASM ?? new URL("../dist/downbeat_engine.wasm", import.meta.url);
const module = new WebAssembly.Module(readFileSync(wasm));
const project = readFileSync(new URL("../../../../examples/projects/hello.toml", import.meta.url), "utf8");

// The main thread's half: load once to read the table, as DownbeatEngine.create does.
const main = engineExports(new WebAssembly.Instance(module, {}));
loadProject(main, processorOptions({ project, params: 0 }));
const table = readTable(main);
const options = processorOptions({ module, project, params: table.params.length, controlRecords: 256 });
const core = new EngineCore(options);
const controller = new Controller({ control: options.control, table });
const meters = new Meters(options.status, core.channels, table);
const out = [new Float32Array(128), new Float32Array(128)];
const freqs = new Float64Array([110, 220, 330, 440]);
const keep = [null];
const sink = new Float64Array(1);

function run(n) {
  for (let i = 0; i < n; i++) {
    if ((i & 3) === 0) controller.setParam("tone", "freq", freqs[(i >> 2) & 3]);
    if ((i & 15) === 0) controller.noteOn(60 + (i & 7), 0.75);
    if ((i & 15) === 8) controller.noteOff(60 + (i & 7));
    if ((i & 63) === 4) controller.ramp("lowpass", "freq", freqs[i & 3] * 4, 0.5, { frame: i * 128 });
    core.process(out);
    sink[0] += meters.update().peak(0) + meters.value(2);
    if (mode === "allocating") keep[0] = { i };
  }
}

const starts = [];
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) starts.push({ t: entry.startTime, kind: entry.detail?.kind });
});
observer.observe({ entryTypes: ["gc"] });
run(20_000); // warm-up: the JIT's own allocations happen here
await new Promise((r) => setTimeout(r, 50));
// A full collection now, so the old generation that loading and the warm-up filled cannot start
// incremental marking inside the loop: without it about one run in four saw one such GC (kind 4,
// incremental) that no allocation in the loop caused, while the loop's garbage shows as scavenges.
globalThis.gc();
await new Promise((r) => setTimeout(r, 50));
const quanta = Number(process.env.NOGC_QUANTA ?? 150_000);
const from = performance.now();
run(quanta);
const to = performance.now();
await new Promise((r) => setTimeout(r, 50));
observer.disconnect();
const inside = starts.filter((g) => g.t >= from && g.t <= to);
console.log(JSON.stringify({
  gcs: inside.length,
  kinds: inside.map((g) => g.kind),
  quanta,
  position: core.position(),
  eventErrors: meters.eventErrors,
  dropped: meters.dropped,
  peak: meters.peak(0),
}));
