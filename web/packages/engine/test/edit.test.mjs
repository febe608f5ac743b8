// Live edits on the real wasm engine, in Node: a render with edits in the middle (a side branch
// added, its edge moved, removed) is bit for bit the render without them on the branch they
// leave alone (a synth's release, a filter's and a spectral compressor's state, a string, the
// latency delay beside them); `engine.edit` (main thread, port, worklet, status board; the
// worklet stood in for by worklet-stub.mjs) resolves once the block that took the edit over
// has been rendered, with its frame and the new table, and the added node can be addressed;
// every refused edit rejects with the engine's message naming the culprit, and the output is
// what it would have been. Needs dist/downbeat_engine.wasm (npm run build, then
// scripts/build-wasm.sh) or DOWNBEAT_WASM=path.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Controller, DownbeatEngine, EngineError, UnknownName } from "@downbeat/engine";
import { EngineCore } from "@downbeat/engine/core.js";
import { engineExports, loadProject, paramSlots, readTable } from "../dist/abi.js";
import { processorOptions } from "./util.mjs";
import { fakeContext, quanta, renderUntil } from "./worklet-stub.mjs";

const wasm = process.env.DOWNBEAT_WASM ?? fileURLToPath(new URL("../dist/downbeat_engine.wasm", import.meta.url));
assert.ok(existsSync(wasm), `${wasm} is missing: run web/packages/engine/scripts/build-wasm.sh`);
const module = new WebAssembly.Module(readFileSync(wasm));

/** The first frame at which two renders (arrays of channels) differ in their bits, or -1. */
function firstDifference(a, b, from = 0, to = Infinity) {
  const end = Math.min(to, a[0].length, b[0].length);
  const bits = (x) => new Uint32Array(Float32Array.of(x).buffer)[0];
  for (let i = from; i < end; i++) {
    for (let c = 0; c < a.length; c++) if (bits(a[c][i]) !== bits(b[c][i])) return i;
  }
  return -1;
}

describeCore();
describeEngine();

/** EngineCore, the worklet's half, driven as its process() is: edits between quanta. */
function describeCore() {
  // A synth releasing through a filter and a spectral compressor (state, FFT frames, and a
  // latency delay on every other path into the mix), and a string.
  const project =
    'sample_rate = 48000\nblock_size = 128\nedges = ["keys -> lp -> comp -> mix", "pluck -> mix", "mix -> out"]\n' +
    '[nodes.keys]\ntype = "synth"\nrelease = 1.5\n[nodes.lp]\ntype = "biquad"\nfreq = 1500.0\n' +
    '[nodes.comp]\ntype = "spectral_compressor"\nfft_size = 512\nthreshold_db = -30.0\n' +
    '[nodes.pluck]\ntype = "karplus"\nnotes = [45, 52, 57]\ninterval = 0.25\nlength = 0.2\n' +
    '[nodes.mix]\ntype = "mix"\n[nodes.out]\ntype = "output"\n';

  /** A core playing one note from frame 0, released at frame 2000, well before the edits. */
  function playing() {
    const main = engineExports(new WebAssembly.Instance(module, {}));
    loadProject(main, processorOptions({ project, params: 0 }));
    const table = readTable(main);
    main.db_unload();
    const options = processorOptions({ module, project, params: paramSlots(table) });
    const core = new EngineCore(options);
    const c = new Controller({ control: options.control, table });
    c.noteOn(60, 0.75, { instrument: "keys", frame: 0 });
    c.noteOff(60, { instrument: "keys", frame: 2000 });
    return core;
  }

  function render(core, count, out) {
    const q = [new Float32Array(128), new Float32Array(128)];
    for (let i = 0; i < count; i++) {
      core.process(q);
      out[0].push(...q[0]);
      out[1].push(...q[1]);
    }
  }

  test("a render with live edits in the middle equals the render without them on the branch they leave alone", () => {
    const reference = [[], []];
    render(playing(), 300, reference);

    const core = playing();
    const out = [[], []];
    render(core, 32, out);
    const added = core.edit({
      add: { side: { type: "sine", freq: 330, amp: 0.2, phase: 0.25 }, sg: { type: "gain", gain: 0.5 } },
      connect: ["side -> sg -> mix"],
    });
    assert.equal(added.frame, 32 * 128, "it lands at the next block");
    assert.ok(added.table.params.some((p) => p.node === "side" && p.name === "freq"));
    render(core, 32, out);
    // The side branch's edge moves: straight into the mix, with a level.
    core.edit({ disconnect: ["side -> sg"], connect: ["side -> mix @ -6 dB"] });
    render(core, 32, out);
    const removed = core.edit({ remove: ["side", "sg"] });
    assert.equal(removed.frame, 96 * 128);
    render(core, 204, out);
    assert.equal(core.reclaim(), 1, "the last edit's old schedule, freed between blocks");

    assert.equal(firstDifference(out, reference, 0, added.frame), -1, "before the edit");
    assert.notEqual(firstDifference(out, reference, added.frame, removed.frame), -1, "the side branch is heard");
    assert.equal(
      firstDifference(out, reference, removed.frame),
      -1,
      "once the side branch is gone, the synth's release, the filter, the compressor and the string go on as if there had been no edit",
    );
    assert.ok(out[0].slice(removed.frame).some((x) => x !== 0), "and they sound");
  });
}

/** DownbeatEngine on the main thread, the processor in the stand-in worklet. */
function describeEngine() {
  const project =
    'sample_rate = 48000\nblock_size = 256\nedges = ["keys -> lp -> mix", "mix -> out"]\n' +
    '[nodes.keys]\ntype = "synth"\nrelease = 1.0\n[nodes.lp]\ntype = "biquad"\nfreq = 2000.0\n' +
    '[nodes.mix]\ntype = "mix"\n[nodes.out]\ntype = "output"\n';

  async function start() {
    const context = fakeContext(48000);
    const engine = await DownbeatEngine.create(context, project, { wasm: module, name: "live.toml" });
    engine.noteOn(60, 0.75, { instrument: "keys", frame: 0 });
    engine.noteOff(60, { instrument: "keys", frame: 3000 });
    return { context, engine, node: context.nodes[0] };
  }

  /** The same project without edits, `frames` long. */
  async function reference(frames) {
    const { context, node } = await start();
    const out = [[], []];
    quanta(node, Math.ceil(frames / 128), out);
    context.close();
    return out;
  }

  test("engine.edit resolves once the block that took the edit over has rendered; the added node answers by name", async () => {
    const { context, engine, node } = await start();
    try {
      const out = [[], []];
      quanta(node, 9, out);
      const before = engine.table;
      const edit = engine.edit({ add: { side: { type: "sine", freq: 330, amp: 0.25, phase: 0.25 } }, connect: ["side -> mix"] });
      let settled = false;
      edit.then(() => (settled = true), () => (settled = true));
      // The worklet commits it between two quanta and answers; with no quantum rendered, the
      // engine has not taken it over, so the promise waits (its timer polls the board).
      for (let turns = 0; engine.table === before; turns++) {
        assert.ok(turns < 1000, "the worklet did not answer");
        await new Promise((resolve) => setImmediate(resolve));
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(settled, false, "resolved before the block that takes the edit over was rendered");
      const add = await renderUntil(node, edit, out);
      assert.ok(!add.error, add.error);
      const { frame, table } = add.value;
      // 9 quanta served 1152 of the 1280 frames rendered: the next block starts at 1280 or later.
      assert.ok(frame % 256 === 0 && frame >= 5 * 256, `lands at a block's start: ${frame}`);
      assert.ok(engine.meters().position > frame, "resolved after the block at its frame was rendered");
      assert.equal(engine.table, table);
      const freq = table.params.find((p) => p.node === "side" && p.name === "freq");
      assert.ok(freq.id > Math.max(...table.params.filter((p) => p.node !== "side").map((p) => p.id)), "a new id after the others");
      assert.equal(engine.value("side", "freq"), 330, "reported on the worklet's new, larger status board");

      engine.setParam("side", "freq", 440, { smooth: false });
      quanta(node, 4, out);
      assert.equal(engine.value("side", "freq"), 440);
      const remove = await renderUntil(node, engine.edit({ remove: ["side"] }), out);
      assert.ok(!remove.error, remove.error);
      assert.throws(() => engine.setParam("side", "freq", 220), UnknownName);
      quanta(node, 20, out);

      const ref = await reference(out[0].length);
      assert.equal(firstDifference(out, ref, 0, frame), -1, "unchanged before the edit's frame");
      assert.equal(firstDifference(out, ref, frame), frame, "the sine is heard from exactly its frame");
      assert.equal(firstDifference(out, ref, remove.value.frame), -1, "and gone from the removal's: the synth rang on");
      assert.ok(out[0].slice(remove.value.frame).some((x) => x !== 0));
    } finally {
      context.close();
    }
  });

  test("every refused edit rejects with the engine's message naming the culprit, and changes nothing", async () => {
    const { context, engine, node } = await start();
    try {
      const out = [[], []];
      quanta(node, 3, out);
      const table = JSON.stringify(engine.table);
      const refusals = [
        [{ remove: ["keyz"] }, -7, "remove `keyz`: the graph has no node `keyz` (did you mean `keys`?)"],
        [{ connect: ["keys -> mixer"] }, -7, 'connect "keys -> mixer": the graph has no node `mixer` (did you mean `mix`?)'],
        [{ disconnect: ["keys -> mix"] }, -7, 'disconnect "keys -> mix": the graph has no edge `keys -> mix`'],
        [{ connect: ["mix -> lp"] }, -7, "the edited graph does not compile: the graph has a cycle: `"],
        [{ connect: ["keys -> mix:sidechain"] }, -7, "the edited graph does not compile: node `mix` has no input port `sidechain`; its input ports: `main`"],
        [
          { add: { mono: { type: "sine", channels: 1 } }, connect: ["mono -> mix"] },
          -7,
          "the edited graph does not compile: edge `mono` -> `mix`: `mono` has 1 output channel(s) but `mix` has 2 input channel(s)",
        ],
        [{ add: { lp: { type: "gain" } } }, -7, "add `lp`: the graph already has a node `lp`"],
        [{ add: { x: { type: "sinus" } } }, -7, 'add `x`: unknown node type "sinus"; valid types are '],
        [{ add: { x: { type: "sine", freq: -5 } } }, -7, "add `x`: bad value for `freq` of node `x`: got -5"],
        [{ add: { f: { type: "player", path: "a.wav" } } }, -6, 'add `f`: node `f` is of type "player", which streams a file'],
        [{ remove: ["out"] }, -7, "remove `out`: `out` is the graph's output and cannot be removed"],
        [{ conect: ["keys -> mix"] }, -2, "edit: unknown key `conect`"],
        // All or none: the node added and the edge connected before the refused step are not.
        [{ add: { x: { type: "sine" } }, connect: ["x -> mix", "x -> nowhere"] }, -7, 'connect "x -> nowhere": the graph has no node `nowhere`'],
      ];
      for (const [batch, code, message] of refusals) {
        const r = await renderUntil(node, engine.edit(batch), out);
        const what = JSON.stringify(batch);
        assert.ok(r.error instanceof EngineError, `${what} was not refused: ${JSON.stringify(r.value)}`);
        assert.equal(r.error.code, code, `${what}: ${r.error.message}`);
        assert.ok(r.error.message.startsWith(message), `${what}:\n  got      ${r.error.message}\n  expected ${message}...`);
        assert.equal(JSON.stringify(engine.table), table, `${what}: the table is as it was`);
      }
      // An edit that is taken: it would carry anything a refused one left pending.
      const empty = await renderUntil(node, engine.edit({}), out);
      assert.ok(!empty.error, empty.error);
      assert.equal(JSON.stringify(engine.table), table);
      quanta(node, 10, out);
      const ref = await reference(out[0].length);
      assert.equal(firstDifference(out, ref), -1, "the output is what it is without the refused edits");
      assert.ok(out[0].some((x) => x !== 0));
    } finally {
      context.close();
    }
  });
}
