// Shared by the Node tests: ProcessorOptions with fresh rings and status board, as
// DownbeatEngine.create makes them.

/** The status board's record, as a reader sees it now. */
export function readStatus(options, channels = 2, params = 2) {
  return new Float64Array(options.status.slice(8, 8 * (1 + statusLength(channels, params))));
}
import { RingBuffer } from "@downbeat/ringbuf";
import { CONTROL_RECORD } from "@downbeat/engine";

/** Float64 words of a status record: the header (13 words: position, counters, recording, the
 * song's transport), peak and RMS per channel, one value per parameter. */
export function statusLength(channels, params) {
  return 13 + 2 * channels + params;
}

export function processorOptions({ module = null, project = "", channels = 2, params = 2, length = -1, controlRecords = 64, recordFrames = 4096, midi = null, files = [] } = {}) {
  const enc = new TextEncoder();
  const len = statusLength(channels, params);
  return {
    module,
    project: enc.encode(project),
    name: enc.encode("test.toml"),
    files: files.map(([path, bytes]) => ({ path: enc.encode(path), bytes })),
    midi,
    control: RingBuffer.getStorageForCapacity(controlRecords * CONTROL_RECORD, Uint32Array, CONTROL_RECORD),
    status: new SharedArrayBuffer(8 * (1 + len)),
    record: RingBuffer.getStorageForCapacity(recordFrames * channels, Float32Array, channels),
    params,
    length,
  };
}

export const table = {
  params: [
    { id: 0, node: "g", name: "gain", min: 0, max: 4, initial: 1, output: false },
    { id: 1, node: "osc", name: "freq", min: 1, max: 20000, initial: 440, output: false },
    { id: 2, node: "env", name: "level", min: 0, max: 1, initial: 0, output: true },
  ],
  instruments: [{ id: 0, node: "keys" }, { id: 1, node: "pluck" }],
  sample_rate: 48000,
  block_size: 256,
  channels: 2,
};
