/**
 * The main-thread half: compiles the module, checks the project, starts the worklet, and from
 * then on talks to it only through shared rings.
 *
 * @module
 */

import { engineExports, loadProject, readTable, utf8Encode, type EngineTable, type LoadInput } from "./abi.js";
import {
  Controller,
  type AllNotesOffOptions,
  type At,
  type ControllerInit,
  type NoteOptions,
  type SetOptions,
} from "./controller.js";
import { EngineError } from "./errors.js";
import { Meters } from "./meters.js";
import { CONTROL_RECORD, Op, PROCESSOR_NAME, statusRecordLength, type ProcessorOptions } from "./protocol.js";
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
  /** Status records (one per block) the ring holds; default 64. */
  statusCapacity?: number;
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
 * engine.noteOn(60, 100);
 * engine.setParam("keys", "cutoff", 1200);
 * requestAnimationFrame(() => console.log(engine.meters().peak(0), engine.value("keys", "cutoff")));
 * ```
 *
 * The page must be cross-origin isolated (COOP `same-origin`, COEP `require-corp`) for
 * `SharedArrayBuffer`. After `create` no message goes through the node's port: events go down a
 * control ring, meters and values come back up a status ring, recorded audio goes through a
 * third ring to a Worker.
 */
export class DownbeatEngine {
  /** The node running the project: connect it. Output channels are the project's. */
  readonly node: AudioWorkletNode;
  /** What the project lets you address. */
  readonly table: EngineTable;
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
    const params = info.table.params.length;
    const recordLen = statusRecordLength(info.channels, params);
    const control = RingBuffer.getStorageForCapacity(
      (options.controlCapacity ?? 1024) * CONTROL_RECORD,
      Uint32Array,
      CONTROL_RECORD,
    );
    const status = RingBuffer.getStorageForCapacity((options.statusCapacity ?? 64) * recordLen, Float64Array, recordLen);
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
    this.table = info.table;
    this.sampleRate = info.sampleRate;
    this.blockSize = info.blockSize;
    this.channels = info.channels;
    this.midiFrames = info.midiFrames;
    this._control = control;
    this._controller = new Controller({ control, table: info.table });
    this._meters = new Meters(status, info.channels, info.table);
    this._record = record;
  }

  /**
   * The control ring and the table, to send to a Worker (`postMessage`) and wrap there in a
   * {@link Controller}. The ring has one writer: once a Worker sends, stop sending from here.
   */
  controller(): ControllerInit {
    return { control: this._control, table: this.table };
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
  record(options: At & { fileName?: string } = {}): Recording {
    if (this._recording && !this._recording.finished) throw new Error("a recording is already running: stop it first");
    const fileName = options.fileName ?? `downbeat-${Date.now()}.wav`;
    this._controller._send(Op.RecordStart, 0, options.frame, 0, 0, 0, "record");
    this._recording = new Recording(this._record, this.channels, this.sampleRate, fileName, this._meters, this._controller);
    return this._recording;
  }
}
