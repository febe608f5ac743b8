// The worklet's process() path creates no garbage: EngineCore.process on the real wasm engine
// (hello.toml, 150 000 quanta = 400 s of audio) with control traffic every few quanta and the
// meters read after each, in a Node whose young generation is 1 MiB, so that even one small
// object per quantum forces several scavenges inside the loop. Needs dist/downbeat_engine.wasm
// (npm run build, then scripts/build-wasm.sh) or DOWNBEAT_WASM=path.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const child = fileURLToPath(new URL("./nogc-child.mjs", import.meta.url));
const wasm = process.env.DOWNBEAT_WASM ?? fileURLToPath(new URL("../dist/downbeat_engine.wasm", import.meta.url));

function measure(mode) {
  assert.ok(existsSync(wasm), `${wasm} is missing: run web/packages/engine/scripts/build-wasm.sh`);
  const out = execFileSync(process.execPath, ["--expose-gc", "--max-semi-space-size=1", child, mode], { encoding: "utf8" });
  return JSON.parse(out.trim().split("\n").pop());
}

test("EngineCore.process on the real engine, with control traffic and meter reads: no GC", () => {
  const r = measure("clean");
  assert.equal(r.position >= r.quanta * 128, true, "the engine rendered every quantum");
  assert.equal(r.eventErrors, 0, "the engine took every event");
  assert.equal(r.dropped, 0);
  assert.ok(r.peak > 0, "it made sound");
  assert.equal(r.gcs, 0, `${r.gcs} garbage collections (V8 kinds ${r.kinds}) during ${r.quanta} quanta`);
});

test("the detector works: one small object per quantum is caught", () => {
  const r = measure("allocating");
  assert.ok(r.gcs > 0, "one object per quantum must trigger a scavenge inside the loop");
});
