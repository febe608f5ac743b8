/**
 * Live edits of the running graph: the shape of a batch and of its result. The engine applies a
 * batch all or none at one block boundary and keeps every node the batch leaves alone running,
 * its state included (see `DownbeatEngine.edit`, `EngineCore.edit`).
 *
 * @module
 */

import type { EngineTable } from "./abi.js";

/** A parameter value, as a project file writes it: a number, a flag, a name or path, a list of numbers, a table of paths. */
export type ParamValue = number | boolean | string | number[] | Record<string, string>;

/**
 * A node to add: its `type` and parameters, exactly as its `[nodes.NAME]` table in a project
 * file (`{ type: "biquad", mode: "lowpass", freq: 800 }`). Checked as the project file is: an
 * unknown type or parameter, or a value out of range, refuses the batch.
 */
export interface NodeSpec {
  /** The node type (`downbeat nodes` lists them; the browser refuses `player`, `echoes`, `input`, `lv2`, `clap`, `vst3`). */
  type: string;
  /** Its parameters. */
  [param: string]: ParamValue;
}

/**
 * One batch of live edits, applied all or none at one block boundary. Every key is optional;
 * the steps run in this order: `disconnect`, `remove`, `add`, `connect`, `output`.
 *
 * ```js
 * await engine.edit({
 *   add: { echo: { type: "karplus", notes: [57, 64], interval: 0.25 } },
 *   connect: ["echo -> mix @ -6 dB"],   // a project's edge syntax: chains, ports, levels
 *   disconnect: ["pad -> mix"],
 *   remove: ["pad"],
 * });
 * ```
 */
export interface EditBatch {
  /** Nodes to add, by name, each written as its `[nodes.NAME]` table. */
  add?: Record<string, NodeSpec>;
  /** Nodes to remove, with every edge to or from them. The output node cannot be removed. */
  remove?: string[];
  /** Edges to add, as a project's `edges` entries: `"a -> b"`, `"a -> b -> c"`, `"kick -> comp:sidechain"`, `"vox -> reverb @ -12 dB"`. */
  connect?: string[];
  /** Edges to remove, written as they were connected (without the level). */
  disconnect?: string[];
  /** The node to make the output: one with the running output's channel count. */
  output?: string;
}

/** Options of an edit. */
export interface EditOptions {
  /**
   * Files the nodes to add refer to (a sampler's samples), keyed by the path as written in the
   * node's parameters, as `DownbeatEngine.create`'s `files`.
   */
  files?: Record<string, Uint8Array | ArrayBuffer>;
}

/** What an applied edit gives back. */
export interface EditResult {
  /**
   * The engine frame the edit took effect at: the first frame of the block that took it over
   * (frames rendered before it still play out of the worklet's FIFO first).
   */
  frame: number;
  /**
   * What the edited graph lets you address. Parameters and instruments the batch added have new
   * ids after the others; those of the nodes it kept keep theirs; those of the nodes it removed
   * are gone.
   */
  table: EngineTable;
}

/** The batch as the engine's `db_edit` reads it (JSON). @internal */
export function batchJson(batch: EditBatch | string): string {
  if (typeof batch === "string") return batch;
  if (batch === null || typeof batch !== "object" || Array.isArray(batch)) {
    throw new TypeError(`an edit is an object with add, remove, connect, disconnect and output, got ${String(batch)}`);
  }
  return JSON.stringify(batch);
}
