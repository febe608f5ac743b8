// Shared by the Node tests: ProcessorOptions with fresh rings, as DownbeatEngine.create makes them.
import { RingBuffer } from "@downbeat/ringbuf";
import { CONTROL_RECORD } from "@downbeat/engine";

export function statusLength(channels, params) {
  return 8 + 2 * channels + params;
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
    status: RingBuffer.getStorageForCapacity(64 * len, Float64Array, len),
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
