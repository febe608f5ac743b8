/**
 * The recording's Worker: drains the record ring (interleaved float frames the worklet writes)
 * into a WAV file in the origin-private file system, through a sync access handle, so a
 * recording of any length costs no memory. Messages: `{ ring, channels, sampleRate, name }` to
 * start, `{ end, abort }` once the worklet has stopped (`end` = frames it recorded); it answers
 * `{ frames }` when the file is complete, or `{ error }`.
 *
 * @module
 */

import { RingBuffer } from "./ringbuf.js";
import { WAV_HEADER_BYTES, wavHeader } from "./wav.js";

// The parts of the worker scope and of OPFS used here (the DOM library describes neither).
interface SyncHandle {
  write(buffer: ArrayBufferView, options: { at: number }): number;
  truncate(size: number): void;
  flush(): void;
  close(): void;
}
declare const self: {
  onmessage: ((e: { data: any }) => void) | null;
  postMessage(message: unknown): void;
};

let end = -1;
let abort = false;

self.onmessage = ({ data }) => {
  if ("ring" in data) {
    run(data).then(
      (frames) => self.postMessage({ frames }),
      (e) => self.postMessage({ error: String(e?.message ?? e) }),
    );
  } else {
    end = data.end;
    abort = data.abort;
  }
};

async function run(start: { ring: SharedArrayBuffer; channels: number; sampleRate: number; name: string }): Promise<number> {
  const { channels, sampleRate, name } = start;
  const ring = new RingBuffer(start.ring, Float32Array);
  const dir = await navigator.storage.getDirectory();
  const fileHandle = await dir.getFileHandle(name, { create: true });
  const handle = (await (fileHandle as unknown as { createSyncAccessHandle(): Promise<SyncHandle> }).createSyncAccessHandle());
  try {
    handle.truncate(0);
    handle.write(wavHeader(channels, sampleRate, 0), { at: 0 });
    const chunk = new Float32Array(channels * 16384);
    let frames = 0;
    for (;;) {
      const got = ring.pop(chunk) / channels;
      if (got > 0) {
        handle.write(chunk.subarray(0, got * channels), { at: WAV_HEADER_BYTES + frames * channels * 4 });
        frames += got;
        continue;
      }
      if (abort) throw new Error("recording aborted");
      if (end >= 0 && frames >= end) break;
      await new Promise((ok) => setTimeout(ok, 5));
    }
    handle.write(wavHeader(channels, sampleRate, frames), { at: 0 });
    handle.flush();
    return frames;
  } finally {
    handle.close();
  }
}
