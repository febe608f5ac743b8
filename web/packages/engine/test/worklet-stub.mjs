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

/**
 * An OfflineAudioContext for Node, just enough for `renderOffline`: `startRendering` runs the
 * node's processor quantum by quantum (128 frames) into the buffer it resolves with;
 * `suspend(seconds)` resolves when rendering reaches that time's quantum and holds the render
 * (turning the event loop, so the port's messages and the engine's promises run) until
 * `resume()`. Set `globalThis.OfflineAudioContext` to it before calling `renderOffline`.
 */
export class FakeOfflineAudioContext {
  constructor({ numberOfChannels, length, sampleRate }) {
    this.numberOfChannels = numberOfChannels;
    this.length = length;
    this.sampleRate = sampleRate;
    this.nodes = [];
    this.destination = {};
    this.audioWorklet = { addModule: async (url) => void (await import(String(url))) };
    this._suspensions = new Map();
    this._resume = null;
  }

  suspend(seconds) {
    const at = Math.floor((seconds * this.sampleRate) / 128) * 128;
    return new Promise((resolve) => this._suspensions.set(at, resolve));
  }

  resume() {
    const go = this._resume;
    this._resume = null;
    go?.();
    return Promise.resolve();
  }

  async startRendering() {
    const out = Array.from({ length: this.numberOfChannels }, () => new Float32Array(this.length));
    const quantum = out.map(() => new Float32Array(128));
    try {
      for (let at = 0; at < this.length; at += 128) {
        const suspended = this._suspensions.get(at);
        if (suspended) {
          this._suspensions.delete(at);
          await new Promise((resolve) => {
            this._resume = resolve;
            suspended();
          });
        }
        for (const node of this.nodes) node.processor.process([], [quantum]);
        const n = Math.min(128, this.length - at);
        quantum.forEach((q, c) => out[c].set(q.subarray(0, n), at));
      }
    } finally {
      for (const node of this.nodes) {
        node.port.close();
        node.processorPort.close();
      }
    }
    return {
      numberOfChannels: this.numberOfChannels,
      length: this.length,
      sampleRate: this.sampleRate,
      getChannelData: (c) => out[c],
    };
  }
}
