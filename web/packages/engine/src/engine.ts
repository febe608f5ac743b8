/**
 * The main-thread half: compiles the module, checks the project, starts the worklet, and from
 * then on talks to it through shared rings, and through the node's port for live edits only.
 *
 * @module
 */

import {
  engineExports,
  loadProject,
  paramSlots,
  readTable,
  utf8Encode,
  type EngineTable,
  type LoadInput,
} from "./abi.js";
import {
  Controller,
  type AllNotesOffOptions,
  type At,
  type AtFrame,
  type ControllerInit,
  type NoteOptions,
  type SetOptions,
  type Transport,
} from "./controller.js";
import { batchJson, type EditBatch, type EditOptions, type EditResult } from "./edit.js";
import { EngineError } from "./errors.js";
import { Meters } from "./meters.js";
import {
  CONTROL_RECORD,
  Op,
  PROCESSOR_NAME,
  statusBoardBytes,
  type EditReply,
  type EditRequest,
  type ProcessorOptions,
  type WorkletMessage,
} from "./protocol.js";
import { Recording } from "./recording.js";
import { RingBuffer } from "./ringbuf.js";

/** Where the compiled engine comes from: a module, its bytes, or a URL to fetch. */
export type WasmSource = WebAssembly.Module | BufferSource | URL | string;

/** Options of {@link DownbeatEngine.create} and {@link DownbeatEngine.inspect}. */
export interface ProjectOptions {
  /**
   * Files the project refers to (a sampler's samples), keyed by the path as written in the
   * project, e.g. `{ "../samples/kick.wav": bytes }`. Decoded and resampled by the engine.
   */
  files?: Record<string, Uint8Array | ArrayBuffer>;
  /** A Standard MIDI File put on the timeline, as `downbeat run --midi` does. */
  midi?: Uint8Array | ArrayBuffer;
  /** The project's name in messages; default `project.toml`. */
  name?: string;
  /** The engine; default `downbeat_engine.wasm` next to this file. */
  wasm?: WasmSource;
}

/** Options of {@link DownbeatEngine.create}. */
export interface CreateOptions extends ProjectOptions {
  /** Frames to render before going silent (an offline render); default: no end. */
  length?: number;
  /** Control records the ring holds; default 1024. */
  controlCapacity?: number;
  /** Seconds of audio the recording ring holds while its Worker writes; default 4. */
  recordSeconds?: number;
}

/** What a project is, read on the main thread without starting anything. */
export interface ProjectInfo {
  table: EngineTable;
  sampleRate: number;
  blockSize: number;
  channels: number;
  /** Frames a run playing the MIDI file lasts (as the CLI computes it), or null without one. */
  midiFrames: number | null;
}

const DEFAULT_WASM = new URL("./downbeat_engine.wasm", import.meta.url);
const PROCESSOR_URL = new URL("./processor.js", import.meta.url);
const compiled = new Map<string, Promise<WebAssembly.Module>>();
const worklets = new WeakMap<BaseAudioContext, Promise<void>>();

/** Compiles the engine (once per URL). */
export async function compileEngine(source: WasmSource = DEFAULT_WASM): Promise<WebAssembly.Module> {
  if (source instanceof WebAssembly.Module) return source;
  if (typeof source !== "string" && !(source instanceof URL)) return WebAssembly.compile(source);
  const url = String(source);
  let module = compiled.get(url);
  if (!module) {
    module = (async () => {
      const res = await fetch(url);
      if (!res.ok) throw new EngineError(-2, `could not fetch the engine ${url}: HTTP ${res.status}`);
      return WebAssembly.compile(await res.arrayBuffer());
    })();
    compiled.set(url, module);
    module.catch(() => compiled.delete(url));
  }
  return module;
}

function bytes(b: Uint8Array | ArrayBuffer): Uint8Array {
  return b instanceof Uint8Array ? b : new Uint8Array(b);
}

function loadInput(project: string, options: ProjectOptions): LoadInput {
  return {
    project: utf8Encode(project),
    name: utf8Encode(options.name ?? "project.toml"),
    files: Object.entries(options.files ?? {}).map(([path, b]) => ({ path: utf8Encode(path), bytes: bytes(b) })),
    midi: options.midi ? bytes(options.midi) : null,
  };
}

/** Loads the project in an instance of its own on this thread: errors surface here. */
async function inspect(module: WebAssembly.Module, input: LoadInput): Promise<ProjectInfo> {
  const e = engineExports(await WebAssembly.instantiate(module, {}));
  loadProject(e, input);
  const info: ProjectInfo = {
    table: readTable(e),
    sampleRate: e.db_sample_rate(),
    blockSize: e.db_block_size(),
    channels: e.db_channels(),
    midiFrames: input.midi ? e.db_midi_frames() : null,
  };
  e.db_unload();
  return info;
}

/**
 * A Downbeat project running in an AudioWorklet, in WebAssembly.
 *
 * ```js
 * import { DownbeatEngine } from "@downbeat/engine";
 * const context = new AudioContext({ sampleRate: 48000 }); // the project's rate
 * const engine = await DownbeatEngine.create(context, await (await fetch("synth.toml")).text());
 * engine.node.connect(context.destination);
 * engine.noteOn(60, 0.75);
 * engine.setParam("keys", "cutoff", 1200);
 * engine.noteOn(64, 0.75, { beat: 8 });           // when the song reaches beat 8
 * engine.transport.loop(0, 16, { nextBar: true }); // the song's transport
 * requestAnimationFrame(() => console.log(engine.meters().peak(0), engine.value("keys", "cutoff")));
 * ```
 *
 * The page must be cross-origin isolated (COOP `same-origin`, COEP `require-corp`) for
 * `SharedArrayBuffer`. After `create` events go down a control ring, meters and values come back
 * on a shared status board, recorded audio goes through a second ring to a Worker; the node's
 * port carries live edits ({@link DownbeatEngine.edit}) only, which the worklet handles between
 * two `process()` calls.
 */
export class DownbeatEngine {
  /** The node running the project: connect it. Output channels are the project's. */
  readonly node: AudioWorkletNode;
  /** The project's format. */
  readonly sampleRate: number;
  readonly blockSize: number;
  readonly channels: number;
  /** Frames the MIDI file lasts (as `downbeat run --midi` computes it), or null. */
  readonly midiFrames: number | null;

  private readonly _controller: Controller;
  private readonly _control: SharedArrayBuffer;
  private readonly _meters: Meters;
  private readonly _record: SharedArrayBuffer;
  private _recording: Recording | null = null;
  /** Edits sent to the worklet and not answered yet, by request id. */
  private readonly _edits = new Map<number, { resolve: (r: EditResult) => void; reject: (e: Error) => void }>();
  private _nextEdit = 1;

  /**
   * Compiles the engine, loads the project on this thread (so that a bad project rejects here,
   * with the message `downbeat run` prints for it), then starts it in the context's worklet.
   *
   * @throws EngineError: the project, a file or the MIDI file does not load, or a node cannot
   * run in the browser (`code` -6); the context's sample rate is not the project's.
   */
  static async create(context: BaseAudioContext, project: string, options: CreateOptions = {}): Promise<DownbeatEngine> {
    const module = await compileEngine(options.wasm);
    const input = loadInput(project, options);
    const info = await inspect(module, input);
    if (context.sampleRate !== info.sampleRate) {
      throw new EngineError(
        -2,
        `${options.name ?? "project.toml"} runs at ${info.sampleRate} Hz but the AudioContext at ${context.sampleRate} Hz: ` +
          `make it with new AudioContext({ sampleRate: ${info.sampleRate} })`,
      );
    }
    let added = worklets.get(context);
    if (!added) {
      added = context.audioWorklet.addModule(PROCESSOR_URL);
      worklets.set(context, added);
    }
    await added;
    const params = paramSlots(info.table);
    const control = RingBuffer.getStorageForCapacity(
      (options.controlCapacity ?? 1024) * CONTROL_RECORD,
      Uint32Array,
      CONTROL_RECORD,
    );
    const status = new SharedArrayBuffer(statusBoardBytes(info.channels, params));
    const recordFrames = Math.ceil((options.recordSeconds ?? 4) * info.sampleRate);
    const record = RingBuffer.getStorageForCapacity(recordFrames * info.channels, Float32Array, info.channels);
    const processorOptions: ProcessorOptions = {
      module,
      ...input,
      control,
      status,
      record,
      params,
      length: options.length ?? -1,
    };
    const node = new AudioWorkletNode(context, PROCESSOR_NAME, {
      numberOfInputs: 0,
      numberOfOutputs: 1,
      outputChannelCount: [info.channels],
      processorOptions,
    });
    return new DownbeatEngine(node, info, control, status, record);
  }

  /**
   * Loads a project on this thread and says what it is, without an AudioContext: its sample
   * rate, block size, channels, what it lets you address, how long its MIDI file lasts.
   *
   * @throws EngineError as {@link DownbeatEngine.create} does.
   */
  static async inspect(project: string, options: ProjectOptions = {}): Promise<ProjectInfo> {
    return inspect(await compileEngine(options.wasm), loadInput(project, options));
  }

  private constructor(
    node: AudioWorkletNode,
    info: ProjectInfo,
    control: SharedArrayBuffer,
    status: SharedArrayBuffer,
    record: SharedArrayBuffer,
  ) {
    this.node = node;
    this.sampleRate = info.sampleRate;
    this.blockSize = info.blockSize;
    this.channels = info.channels;
    this.midiFrames = info.midiFrames;
    this._control = control;
    this._controller = new Controller({ control, table: info.table });
    this._meters = new Meters(status, info.channels, info.table);
    this._record = record;
    node.port.onmessage = (event: MessageEvent<EditReply>) => this._reply(event.data);
  }

  /** What the project lets you address; after a live edit, what the edited graph has. */
  get table(): EngineTable {
    return this._controller.table;
  }

  /**
   * Edits the running graph without stopping it: one batch, applied all or none at one block
   * boundary, the way native `LiveEditor` edits (nodes added as a project file's
   * `[nodes.NAME]` tables, edges in a project's edge syntax). Every node the batch leaves alone
   * goes on with its state: a held or releasing note, a string's delay line, a filter's memory,
   * parameter values and ramps. Resolves once the worklet has rendered the block that took the
   * edit over, with the frame it took effect at and the new table (`engine.table` too): the
   * nodes it added can then be addressed by name (`setParam`, `noteOn`, `value`, `meters()`).
   * While the context is suspended, it waits.
   *
   * ```js
   * // Put a filter between the synth and the mix: the synth's notes ring on through it.
   * const { frame } = await engine.edit({
   *   add: { lp: { type: "biquad", mode: "lowpass", freq: 800 } },
   *   disconnect: ["keys -> mix"],
   *   connect: ["keys -> lp -> mix"],
   * });
   * engine.ramp("lp", "freq", 4000, 2);
   * await engine.edit({ remove: ["lp"], connect: ["keys -> mix"] }); // and out again
   * ```
   *
   * The worklet builds the new nodes and compiles the edited graph between two `process()`
   * calls (it allocates); the block that takes the edit over allocates nothing. A Controller
   * made from `engine.controller()` before the edit goes on addressing the nodes it knew; make a
   * new one to reach the added ones.
   *
   * @throws EngineError, and the graph runs on unchanged: code -7 refused (an unknown node, type,
   * parameter or port, a name taken, a cycle, channel counts that differ, removing the output;
   * the message, the engine's, names the step and the culprit), -6 a node the browser cannot run,
   * -2 not a batch, -8 the worklet has not rendered since the last 8 edits.
   */
  async edit(batch: EditBatch, options: EditOptions = {}): Promise<EditResult> {
    const result = await this._commit(batch, options);
    await this._applied(result.frame);
    // The old schedule, with the nodes the edit removed, is freed in the worklet between blocks.
    this.node.port.postMessage({ type: "reclaim" } satisfies WorkletMessage);
    return result;
  }

  /**
   * Sends `batch` to the worklet; resolves once it has committed it (the engine takes it over
   * at the start of the block at `frame`), with the new table in place here. @internal
   */
  _commit(batch: EditBatch, options: EditOptions = {}): Promise<EditResult> {
    const id = this._nextEdit++;
    const request: EditRequest = {
      type: "edit",
      id,
      batch: utf8Encode(batchJson(batch)),
      files: Object.entries(options.files ?? {}).map(([path, b]) => ({ path: utf8Encode(path), bytes: bytes(b) })),
    };
    return new Promise<EditResult>((resolve, reject) => {
      this._edits.set(id, { resolve, reject });
      this.node.port.postMessage(request satisfies WorkletMessage);
    });
  }

  /** The worklet's answer to an edit: the new table and board in place, then the promise settled. */
  private _reply(reply: EditReply): void {
    if (reply?.type !== "edit") return;
    const pending = this._edits.get(reply.id);
    if (!pending) return;
    this._edits.delete(reply.id);
    if (!reply.ok) {
      pending.reject(new EngineError(reply.code, reply.message));
      return;
    }
    const before = new Set(this.table.params.map((p) => p.id));
    const added = new Set(reply.table.params.map((p) => p.id).filter((id) => !before.has(id)));
    this._controller._setTable(reply.table);
    this._meters._rebind(reply.status, reply.table, added);
    pending.resolve({ frame: reply.frame, table: reply.table });
  }

  /** Resolves once the worklet has reported a block past `frame`: the one that took the edit over. */
  private _applied(frame: number): Promise<void> {
    const every = Math.max(1, (500 * this.blockSize) / this.sampleRate);
    return new Promise<void>((resolve) => {
      const check = () => {
        if (this._meters.update().position > frame) resolve();
        else setTimeout(check, every);
      };
      check();
    });
  }

  /**
   * The control ring and the table, to send to a Worker (`postMessage`) and wrap there in a
   * {@link Controller}. The ring has one writer: once a Worker sends, stop sending from here.
   */
  controller(): ControllerInit {
    return { control: this._control, table: this.table };
  }

  /**
   * The song's transport: `play`, `stop`, `locate(beat)`, `loop(start, end)`, `unloop`,
   * `tempo(bpm, rampBeats?)`, each at a frame, on a beat, on the next beat or bar line, or now
   * (see {@link Transport}). Where the song is comes back in `meters()` (`playing`, `beat`, `bar`,
   * `barBeat`, `bpm`).
   */
  get transport(): Transport {
    return this._controller.transport;
  }

  /** See {@link Controller.setParam}. */
  setParam(node: string, param: string, value: number, options?: SetOptions): true {
    return this._controller.setParam(node, param, value, options);
  }

  /** See {@link Controller.ramp}. */
  ramp(node: string, param: string, target: number, seconds: number, options?: At): true {
    return this._controller.ramp(node, param, target, seconds, options);
  }

  /** See {@link Controller.noteOn}. */
  noteOn(note: number, velocity: number, options?: NoteOptions): true {
    return this._controller.noteOn(note, velocity, options);
  }

  /** See {@link Controller.noteOff}. */
  noteOff(note: number, options?: NoteOptions): true {
    return this._controller.noteOff(note, options);
  }

  /** See {@link Controller.allNotesOff}. */
  allNotesOff(options?: AllNotesOffOptions): true {
    return this._controller.allNotesOff(options);
  }

  /**
   * The latest meters and counters the worklet reported (one object, updated in place: read
   * what you need, don't keep it).
   */
  meters(): Meters {
    return this._meters.update();
  }

  /** The latest value of `node.param` (or of a node's output value) the worklet reported. */
  value(node: string, param: string): number {
    return this._meters.update().value(this._controller.param(node, param).id);
  }

  /**
   * Starts recording the rendered audio at a frame (default: the next block) into a 32-bit
   * float WAV in the origin-private file system, written by a Worker without a gap; the
   * recording's `stop()` gives the `File`. One recording at a time.
   *
   * ```js
   * const recording = engine.record();
   * // ... later
   * const { file, frames, startFrame } = await recording.stop();
   * ```
   *
   * @throws Error if a recording is already running; ControlRingFull.
   */
  record(options: AtFrame & { fileName?: string } = {}): Recording {
    if (this._recording && !this._recording.finished) throw new Error("a recording is already running: stop it first");
    const fileName = options.fileName ?? `downbeat-${Date.now()}.wav`;
    this._controller._send(Op.RecordStart, 0, options.frame, 0, 0, 0, "record");
    this._recording = new Recording(this._record, this.channels, this.sampleRate, fileName, this._meters, this._controller);
    return this._recording;
  }
}
