// A Web Audio stand-in for Node, just enough for DownbeatEngine.create: a context whose
// audioWorklet.addModule imports the real dist/processor.js, and an AudioWorkletNode that
// constructs the registered processor with processorOptions and a real MessageChannel between
// the node's port and the processor's. Nothing renders by itself: the test calls
// `node.processor.process(...)` for each quantum, as the audio thread would, while the main
// thread's side (DownbeatEngine, its promises and timers) runs on Node's event loop.

const processors = new Map();
let nextPort = null;

globalThis.AudioWorkletProcessor ??= class {
  constructor() {
    this.port = nextPort;
  }
};
globalThis.registerProcessor ??= (name, ctor) => processors.set(name, ctor);
globalThis.AudioWorkletNode ??= class {
  constructor(context, name, options) {
    const channel = new MessageChannel();
    this.port = channel.port1;
    nextPort = channel.port2;
    try {
      this.processor = new (processors.get(name))(options);
    } finally {
      nextPort = null;
    }
    this.processorPort = channel.port2;
    context.nodes.push(this);
  }
  connect() {}
};

/** A context at `sampleRate` whose worklet runs dist/processor.js in this thread. */
export function fakeContext(sampleRate) {
  return {
    sampleRate,
    nodes: [],
    audioWorklet: { addModule: async (url) => void (await import(String(url))) },
    /** Closes the ports, so that Node can exit. */
    close() {
      for (const node of this.nodes) {
        node.port.close();
        node.processorPort.close();
      }
    },
  };
}

/**
 * Renders quanta of `frames` on `node` until `promise` settles, one per turn of the event loop
 * (so the port's messages and the engine's timers run in between), appending each channel's
 * samples to `out`. Returns the promise's outcome as `{ value }` or `{ error }`.
 */
export async function renderUntil(node, promise, out, frames = 128) {
  let outcome = null;
  promise.then(
    (value) => (outcome = { value }),
    (error) => (outcome = { error }),
  );
  const channels = out.map(() => new Float32Array(frames));
  for (let turns = 0; outcome === null; turns++) {
    if (turns > 20_000) throw new Error("the promise did not settle in 20 000 quanta");
    await new Promise((resolve) => setImmediate(resolve));
    if (outcome !== null) break;
    node.processor.process([], [channels]);
    channels.forEach((c, k) => out[k].push(...c));
  }
  return outcome;
}

/** Renders `count` quanta of `frames` on `node`, appending to `out`. */
export function quanta(node, count, out, frames = 128) {
  const channels = out.map(() => new Float32Array(frames));
  for (let q = 0; q < count; q++) {
    node.processor.process([], [channels]);
    channels.forEach((c, k) => out[k].push(...c));
  }
}
