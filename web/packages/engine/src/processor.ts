/**
 * The AudioWorklet processor: an {@link EngineCore} per node. `DownbeatEngine.create` adds this
 * module to the context's worklet and makes the node; there is nothing to call here.
 *
 * @module
 */

import { EngineCore } from "./core.js";
import { PROCESSOR_NAME, type ProcessorOptions } from "./protocol.js";

// The AudioWorkletGlobalScope's names; TypeScript's DOM library does not describe that scope.
declare class AudioWorkletProcessor {
  readonly port: MessagePort;
  constructor(options?: { processorOptions?: unknown });
}
declare function registerProcessor(name: string, ctor: unknown): void;

class DownbeatProcessor extends AudioWorkletProcessor {
  private readonly core: EngineCore;

  constructor(options: { processorOptions: ProcessorOptions }) {
    super(options);
    // Throws (a processorerror on the node) if the project does not load; the main thread
    // loaded it first, so that only happens if the two modules differ.
    this.core = new EngineCore(options.processorOptions);
  }

  process(_inputs: Float32Array[][], outputs: Float32Array[][]): boolean {
    this.core.process(outputs[0]);
    return true;
  }
}

registerProcessor(PROCESSOR_NAME, DownbeatProcessor);
