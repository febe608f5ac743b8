/**
 * A recording of the rendered audio: the worklet copies frames into a ring, a Worker writes
 * them to a WAV file in the origin-private file system with a sync access handle.
 *
 * @module
 */

import type { AtFrame, Controller } from "./controller.js";
import type { Meters } from "./meters.js";
import { Op, Status } from "./protocol.js";

/** A finished recording. */
export interface RecordedFile {
  /** The 32-bit float WAV, read from the origin-private file system. */
  file: File;
  /** Its name there (`navigator.storage.getDirectory()`). */
  name: string;
  /** Frames in it. */
  frames: number;
  /** The engine frame of its first frame. */
  startFrame: number;
}

const WORKER_URL = new URL("./recorder-worker.js", import.meta.url);

/** A recording under way: {@link Recording.stop} ends it and gives the file. */
export class Recording {
  /** True once stopped. */
  finished = false;
  private readonly _worker: Worker;
  private readonly _written: Promise<number>;

  /** @internal: made by `engine.record()`. */
  constructor(
    ring: SharedArrayBuffer,
    channels: number,
    sampleRate: number,
    readonly name: string,
    private readonly _meters: Meters,
    private readonly _controller: Controller,
  ) {
    this._worker = new Worker(WORKER_URL, { type: "module" });
    this._written = new Promise((ok, fail) => {
      this._worker.onmessage = ({ data }) => (data.error ? fail(new Error(data.error)) : ok(data.frames));
      this._worker.onerror = (e) => fail(new Error(`the recorder Worker failed: ${e.message}`));
    });
    this._worker.postMessage({ ring, channels, sampleRate, name });
  }

  /**
   * Stops at a frame (default: the next block), waits for the worklet to pass it and the
   * Worker to write every frame, and gives the file.
   *
   * @throws Error if frames were lost (the Worker fell more than the ring behind; make the
   * engine with a larger `recordSeconds`), or the file could not be written.
   */
  async stop(options: AtFrame = {}): Promise<RecordedFile> {
    if (this.finished) throw new Error("this recording is already stopped");
    this.finished = true;
    this._controller._send(Op.RecordStop, 0, options.frame, 0, 0, 0, "record stop");
    // The record is read anew each time: a live edit can move the meters to a larger board.
    while (this._meters.update().raw[Status.RecordState] !== 2) {
      await new Promise((ok) => setTimeout(ok, 10));
    }
    const s = this._meters.raw;
    const frames = s[Status.RecordedFrames];
    const lost = s[Status.RecordLost];
    const startFrame = s[Status.RecordStart];
    this._worker.postMessage({ end: frames, abort: lost > 0 });
    try {
      if (lost > 0) {
        throw new Error(`the recording lost ${lost} frames: its Worker fell behind by more than the ring holds`);
      }
      const written = await this._written;
      if (written !== frames) throw new Error(`the recorder wrote ${written} frames of ${frames}`);
      const dir = await navigator.storage.getDirectory();
      const file = await (await dir.getFileHandle(this.name)).getFile();
      return { file, name: this.name, frames, startFrame };
    } finally {
      this._worker.terminate();
    }
  }
}
