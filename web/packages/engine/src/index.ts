/**
 * `@downbeat/engine`: Downbeat's engine compiled to WebAssembly, running a project in an
 * AudioWorklet. Events go down a SharedArrayBuffer ring, meters come back up another, the
 * rendered audio can be recorded through a third; after start-up only live edits
 * (`engine.edit`) use `postMessage`, handled by the worklet between two blocks.
 *
 * ```js
 * import { DownbeatEngine } from "@downbeat/engine";
 * const context = new AudioContext({ sampleRate: 48000 });
 * const engine = await DownbeatEngine.create(context, projectToml);
 * engine.node.connect(context.destination);
 * engine.noteOn(60, 0.75);
 * engine.transport.loop(0, 16, { nextBar: true });
 * engine.noteOn(67, 0.75, { beat: 8.5 });
 * await engine.edit({ add: { hp: { type: "biquad", mode: "highpass", freq: 200 } },
 *                     disconnect: ["mix -> out"], connect: ["mix -> hp -> out"] });
 * ```
 *
 * @module
 */

export { DownbeatEngine, compileEngine } from "./engine.js";
export type { CreateOptions, ProjectInfo, ProjectOptions, WasmSource } from "./engine.js";
export { Controller, Transport } from "./controller.js";
export type { AllNotesOffOptions, At, AtFrame, ControllerInit, NoteOptions, SetOptions } from "./controller.js";
export { Meters } from "./meters.js";
export { Recording } from "./recording.js";
export type { RecordedFile } from "./recording.js";
export { renderOffline } from "./offline.js";
export type { OfflineEdit, RenderOptions } from "./offline.js";
export type { EditBatch, EditOptions, EditResult, NodeSpec, ParamValue } from "./edit.js";
export { ControlRingFull, EngineError, UnknownName } from "./errors.js";
export type { EngineTable, InstrumentInfo, ParamInfo } from "./abi.js";
export { WAV_HEADER_BYTES, decodeWav, encodeWav, wavHeader } from "./wav.js";
export type { DecodedWav } from "./wav.js";
export { BEAT, CONTROL_RECORD, NEXT_BAR, NEXT_BEAT, NOW, Op } from "./protocol.js";
