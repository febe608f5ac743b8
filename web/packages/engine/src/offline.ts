/**
 * Offline renders: the project through an `OfflineAudioContext` and the engine in its worklet,
 * in the blocks `downbeat run --device offline` renders, so the samples equal native ones.
 *
 * @module
 */

import { DownbeatEngine, type ProjectOptions } from "./engine.js";
import { EngineError } from "./errors.js";

/** Options of {@link renderOffline}. */
export interface RenderOptions extends ProjectOptions {
  /**
   * Seconds to render, rounded up to whole frames as the CLI does. Default: as long as the MIDI
   * file lasts (last event plus the longest release) with `midi`, else 10 s.
   */
  seconds?: number;
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
 * @throws EngineError as `DownbeatEngine.create` does.
 */
export async function renderOffline(
  project: string,
  options: RenderOptions = {},
): Promise<{ channels: Float32Array[]; sampleRate: number; frames: number }> {
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
  const context = new OfflineAudioContext({
    numberOfChannels: info.channels,
    length: frames,
    sampleRate: info.sampleRate,
  });
  const engine = await DownbeatEngine.create(context, project, { ...options, length: frames });
  engine.node.connect(context.destination);
  const buffer = await context.startRendering();
  const channels = Array.from({ length: buffer.numberOfChannels }, (_, c) => buffer.getChannelData(c));
  return { channels, sampleRate: buffer.sampleRate, frames: buffer.length };
}
