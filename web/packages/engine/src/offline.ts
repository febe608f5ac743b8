/**
 * Offline renders: the project through an `OfflineAudioContext` and the engine in its worklet,
 * in the blocks `downbeat run --device offline` renders, so the samples equal native ones.
 *
 * @module
 */

import type { EditBatch, EditOptions } from "./edit.js";
import { DownbeatEngine, type ProjectOptions } from "./engine.js";
import { EngineError } from "./errors.js";

/** Frames of a Web Audio render quantum: an OfflineAudioContext suspends on their boundaries. */
const QUANTUM = 128;

/** A live edit during an offline render: see {@link RenderOptions.edits}. */
export interface OfflineEdit extends EditOptions {
  /**
   * When: the context suspends at this time (rounded down to its 128-frame render quantum, as
   * `OfflineAudioContext.suspend` does), the worklet commits the batch, and the engine takes it
   * over at the start of its next block.
   */
  seconds: number;
  /** The batch, as `DownbeatEngine.edit` takes it. */
  edit: EditBatch;
}

/** Options of {@link renderOffline}. */
export interface RenderOptions extends ProjectOptions {
  /**
   * Seconds to render, rounded up to whole frames as the CLI does. Default: as long as the MIDI
   * file lasts (last event plus the longest release) with `midi`, else 10 s.
   */
  seconds?: number;
  /**
   * Live edits made during the render, each at its time: the nodes an edit leaves alone render
   * on as if there had been none.
   *
   * ```js
   * await renderOffline(toml, { seconds: 4, edits: [
   *   { seconds: 1, edit: { add: { hp: { type: "biquad", mode: "highpass", freq: 300 } },
   *                         disconnect: ["mix -> out"], connect: ["mix -> hp -> out"] } },
   *   { seconds: 3, edit: { remove: ["hp"], connect: ["mix -> out"] } },
   * ] });
   * ```
   */
  edits?: OfflineEdit[];
  /**
   * Called once the engine is made, before its first block renders, with the engine: send what
   * the render is to play, at frames or on the song's beats, and the transport's commands, as
   * on a live engine. The events wait in the control ring (`controlCapacity` records, default
   * 1024) and reach the engine as it renders, as they would live.
   *
   * ```js
   * await renderOffline(toml, { seconds: 20, control(engine) {
   *   engine.transport.loop(4, 8, { nextBar: true });   // loop bar 2 from the next bar line
   *   engine.transport.tempo(120, 2, { beat: 6 });      // ramp to 120 bpm from beat 6
   *   engine.noteOn(72, 0.75, { beat: 2.5 });
   *   engine.noteOff(72, { beat: 2.75 });
   *   engine.transport.stop({ frame: 400000 });
   *   engine.transport.locate(1, { frame: 410000 });
   *   engine.transport.play({ frame: 430000 });
   * } });
   * ```
   */
  control?: (engine: DownbeatEngine) => void;
  /** Control records the ring holds (see {@link RenderOptions.control}); default 1024. */
  controlCapacity?: number;
}

/**
 * Renders a project offline and returns the planar samples, as `downbeat run PROJECT --device
 * offline [--seconds S] [--midi F]` would write them.
 *
 * ```js
 * import { renderOffline } from "@downbeat/engine";
 * const { channels, sampleRate } = await renderOffline(toml, { seconds: 2 });
 * ```
 *
 * `edits` (a live edit at a time) give `editFrames`: the engine frame each took effect at.
 * `control` sends events and transport commands before the first block, timed by frames or
 * beats, exactly as the native engine's `Controller` takes them: the same samples.
 *
 * @throws EngineError as `DownbeatEngine.create` does, or as `DownbeatEngine.edit` does for an
 * edit it refuses (after the render, which goes on without that edit); whatever `control`
 * throws, after the render.
 */
export async function renderOffline(
  project: string,
  options: RenderOptions = {},
): Promise<{ channels: Float32Array[]; sampleRate: number; frames: number; editFrames: number[] }> {
  const info = await DownbeatEngine.inspect(project, options);
  let frames: number;
  if (options.seconds !== undefined) {
    if (!(options.seconds > 0)) throw new EngineError(-2, `--seconds must be above 0, got ${options.seconds}`);
    frames = Math.ceil(options.seconds * info.sampleRate);
  } else if (info.midiFrames !== null) {
    frames = Math.max(1, info.midiFrames);
  } else {
    frames = Math.ceil(10 * info.sampleRate);
  }
  // One suspension per render quantum (a context takes one per time), its edits in order.
  const quanta = new Map<number, { k: number; edit: OfflineEdit }[]>();
  (options.edits ?? []).forEach((edit, k) => {
    if (!(edit.seconds >= 0) || edit.seconds * info.sampleRate >= frames) {
      throw new EngineError(-2, `edit ${k}: seconds must be from 0 to the render's length, got ${edit.seconds}`);
    }
    const q = Math.floor((edit.seconds * info.sampleRate) / QUANTUM);
    quanta.set(q, [...(quanta.get(q) ?? []), { k, edit }]);
  });
  const context = new OfflineAudioContext({
    numberOfChannels: info.channels,
    length: frames,
    sampleRate: info.sampleRate,
  });
  const engine = await DownbeatEngine.create(context, project, { ...options, length: frames });
  engine.node.connect(context.destination);
  // A throw from `control` is raised once the context has rendered: a context left unrendered
  // keeps its worklet, and with it the process, alive.
  let failed: { error: unknown } | null = null;
  try {
    options.control?.(engine);
  } catch (error) {
    failed = { error };
  }
  const editFrames: number[] = [];
  let refused: unknown = null;
  const done = [...quanta].map(([q, batch]) =>
    // Commit while suspended (the worklet answers between two quanta), then render on.
    context.suspend((q * QUANTUM) / info.sampleRate).then(async () => {
      try {
        for (const { k, edit } of batch) {
          try {
            editFrames[k] = (await engine._commit(edit.edit, edit)).frame;
          } catch (err) {
            refused ??= err;
          }
        }
      } finally {
        await context.resume();
      }
    }),
  );
  const buffer = await context.startRendering();
  await Promise.all(done);
  if (failed !== null) throw failed.error;
  if (refused !== null) throw refused;
  const channels = Array.from({ length: buffer.numberOfChannels }, (_, c) => buffer.getChannelData(c));
  return { channels, sampleRate: buffer.sampleRate, frames: buffer.length, editFrames };
}
