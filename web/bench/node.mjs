// `npm run bench -- [--json] [--quick] [--runs N]`: @downbeat/ringbuf against ringbuf.js 0.4,
// side by side in one process, each side of a ring in its own worker_threads Worker.
//
// Cases: element-wise throughput (push/pop of one element), chunks of 128 and of 1024 f32, and
// the round trip of one element over two rings (ping-pong). Runs alternate between the two
// libraries so that drift in the machine hits both. Ratios > 1 favour Downbeat.
import os from "node:os";
import { Worker } from "node:worker_threads";
import * as ours from "@downbeat/ringbuf";
import * as theirs from "ringbuf.js";

const args = process.argv.slice(2);
const json = args.includes("--json");
const quick = args.includes("--quick");
const runsArg = args.indexOf("--runs");
const runs = runsArg >= 0 ? Number(args[runsArg + 1]) : quick ? 1 : 7;
const scale = quick ? 0.02 : 1;

const IMPLS = { downbeat: ours, "ringbuf.js": theirs };
const CASES = [
  { name: "elementwise", chunk: 1, count: 4_000_000, capacity: 1024, unit: "Melem/s" },
  { name: "chunk128", chunk: 128, count: 100_000_000, capacity: 4096, unit: "Melem/s" },
  { name: "chunk1024", chunk: 1024, count: 200_000_000, capacity: 16384, unit: "Melem/s" },
  { name: "roundtrip", chunk: 1, count: 200_000, capacity: 64, unit: "us" },
];

function spawn(data) {
  const worker = new Worker(new URL("./ring-worker.mjs", import.meta.url), { workerData: data });
  const ready = new Promise((resolve) => worker.once("message", resolve));
  const result = ready.then(() => new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  }));
  return { worker, ready, result };
}

async function once(impl, kase) {
  const lib = IMPLS[impl];
  const count = Math.max(kase.chunk * 100, Math.round((kase.count * scale) / kase.chunk) * kase.chunk);
  const sab = lib.RingBuffer.getStorageForCapacity(kase.capacity, Float32Array);
  const control = new SharedArrayBuffer(4);
  const common = { impl, kase: kase.name, sab, control, count, chunk: kase.chunk };
  let sides;
  if (kase.name === "roundtrip") {
    const sab2 = lib.RingBuffer.getStorageForCapacity(kase.capacity, Float32Array);
    sides = [spawn({ ...common, role: "ping", sab2 }), spawn({ ...common, role: "pong", sab2 })];
  } else {
    sides = [spawn({ ...common, role: "producer" }), spawn({ ...common, role: "consumer" })];
  }
  await Promise.all(sides.map((s) => s.ready));
  const go = new Int32Array(control);
  Atomics.store(go, 0, 1);
  Atomics.notify(go, 0);
  const [a, b] = await Promise.all(sides.map((s) => s.result));
  await Promise.all(sides.map((s) => s.worker.terminate()));
  if (kase.name === "roundtrip") {
    const t = Array.from(a.times).sort((x, y) => x - y);
    if (a.check !== ((count - 1) * count) / 2) throw new Error(`${impl}: round trip lost data`);
    return { value: t[t.length >> 1] * 1000, p99: t[Math.floor(t.length * 0.99)] * 1000 };
  }
  // Sum of (i & 0xffff) for i < count, in closed form: whole periods of 0..65535, then the rest
  // (exact in a double: below 2^53 for every count used here).
  const period = 65536;
  const rest = count % period;
  const want = ((count - rest) / period) * ((period * (period - 1)) / 2) + (rest * (rest - 1)) / 2;
  if (b.check !== want) throw new Error(`${impl} ${kase.name}: checksum ${b.check} != ${want}`);
  return { value: count / Math.max(a.ms, b.ms) / 1000 };
}

function summary(values) {
  const s = [...values].sort((x, y) => x - y);
  const round = (x) => Math.round(x * 1000) / 1000;
  return { median: round(s[s.length >> 1]), min: round(s[0]), max: round(s[s.length - 1]) };
}

const results = [];
const ratios = {};
for (const kase of CASES) {
  const samples = { downbeat: [], "ringbuf.js": [] };
  const p99 = { downbeat: [], "ringbuf.js": [] };
  for (let r = 0; r < runs; r++) {
    // Alternate which library goes first, so warm-up and drift do not favour one.
    const order = r % 2 ? ["ringbuf.js", "downbeat"] : ["downbeat", "ringbuf.js"];
    for (const impl of order) {
      const out = await once(impl, kase);
      samples[impl].push(out.value);
      if (out.p99 !== undefined) p99[impl].push(out.p99);
    }
  }
  for (const impl of Object.keys(samples)) {
    results.push({ case: kase.name, impl, unit: kase.unit, ...summary(samples[impl]), runs });
    if (p99[impl].length) {
      results.push({ case: "roundtrip_p99", impl, unit: "us", ...summary(p99[impl]), runs });
    }
  }
  const med = (c, i) => results.find((r) => r.case === c && r.impl === i).median;
  const ratio = (c) =>
    kase.name === "roundtrip" ? med(c, "ringbuf.js") / med(c, "downbeat") : med(c, "downbeat") / med(c, "ringbuf.js");
  ratios[`${kase.name}_vs_ringbufjs`] = Math.round(ratio(kase.name) * 1000) / 1000;
  if (kase.name === "roundtrip") {
    ratios.roundtrip_p99_vs_ringbufjs = Math.round(ratio("roundtrip_p99") * 1000) / 1000;
  }
  if (!json) process.stderr.write(`${kase.name} done\n`);
}

const machine = `${os.cpus().length} cpus, ${os.cpus()[0]?.model ?? os.arch()}, Node ${process.version}`;
const report = { suite: "web-ring", machine, results, ratios };
if (json) {
  console.log(JSON.stringify(report, null, 2));
} else {
  console.log(`web-ring on ${machine}${quick ? " (quick: numbers meaningless)" : ""}`);
  console.log("case            impl          median      min        max     unit");
  for (const r of results) {
    console.log(
      `${r.case.padEnd(15)} ${r.impl.padEnd(12)} ${String(r.median).padStart(9)} ${String(r.min).padStart(9)} ${String(r.max).padStart(9)}   ${r.unit}`,
    );
  }
  for (const [k, v] of Object.entries(ratios)) console.log(`${k.padEnd(32)} ${v}`);
}
