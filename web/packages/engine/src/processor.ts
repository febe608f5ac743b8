/**
 * The AudioWorklet processor: an {@link EngineCore} per node. `DownbeatEngine.create` adds this
 * module to the context's worklet and makes the node; there is nothing to call here.
 *
 * The node's port carries one kind of message, live edits (`DownbeatEngine.edit`): the
 * worklet's thread handles them between two `process()` calls, and answers each on the port.
 *
 * @module
 */

import { EngineCore } from "./core.js";
import { EngineError } from "./errors.js";
import { PROCESSOR_NAME, type EditReply, type ProcessorOptions, type WorkletMessage } from "./protocol.js";

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
    this.port.onmessage = (event: MessageEvent<WorkletMessage>) => this.message(event.data);
  }

  process(_inputs: Float32Array[][], outputs: Float32Array[][]): boolean {
    this.core.process(outputs[0]);
    return true;
  }

  /** An edit (commit it, answer with the frame it lands at and the new table) or a reclaim. */
  private message(m: WorkletMessage): void {
    if (m.type === "reclaim") {
      this.core.reclaim();
      return;
    }
    let reply: EditReply;
    try {
      const r = this.core._edit(m.batch, m.files);
      reply = { type: "edit", id: m.id, ok: true, frame: r.frame, table: r.table, status: r.status };
    } catch (e) {
      const code = e instanceof EngineError ? e.code : -2;
      reply = { type: "edit", id: m.id, ok: false, code, message: e instanceof Error ? e.message : String(e) };
    }
    this.port.postMessage(reply);
  }
}

registerProcessor(PROCESSOR_NAME, DownbeatProcessor);
