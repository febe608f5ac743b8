// A stand-in for the wasm module's exports, for unit tests of the JavaScript halves (FIFO,
// event draining, recording windows, status records) that must not depend on the engine's DSP.
// Its "audio" is a counter: sample f of channel c is f + c / 4 (f = engine frame), so any
// frame served out of order, twice or not at all shows. The real module is tested in
// nogc.test.mjs and the browser tests.
export function fakeEngine({ channels = 2, blockSize = 256, sampleRate = 48000, params = 2, eventRoom = 4096 } = {}) {
  const memory = new WebAssembly.Memory({ initial: 4 });
  let top = 1024; // bump allocator; outputs live at 64 .. 64 + channels * blockSize * 4
  const outBase = 64 * 1024;
  const log = { renders: [], events: [], files: [], loaded: null, midi: null };
  let position = 0;
  let dropped = 0;
  // The engine's queue: what db_event takes until the next render empties it.
  let room = eventRoom;
  const values = new Float32Array(params);
  const text = (p, l) => new TextDecoder().decode(new Uint8Array(memory.buffer, p, l));
  const e = {
    memory,
    log,
    db_alloc: (len) => {
      const p = top;
      top += (len + 7) & ~7;
      return p;
    },
    db_dealloc: () => {},
    db_add_file: (pp, pl, bp, bl) => (log.files.push([text(pp, pl), bl]), 0),
    db_load: (tp, tl, np, nl) => ((log.loaded = [text(tp, tl), text(np, nl)]), 0),
    db_load_midi: (p, l) => ((log.midi = l), 0),
    db_midi_frames: () => 0,
    db_sample_rate: () => sampleRate,
    db_block_size: () => blockSize,
    db_channels: () => channels,
    db_table_ptr: () => 0,
    db_table_len: () => 0,
    db_unload: () => {},
    db_event: (op, id, lo, hi, value, extra, channel) => {
      if (room === 0) return (dropped++, -5);
      room--;
      log.events.push({ at: position, op, id: id >>> 0, lo: lo >>> 0, hi: hi >>> 0, value, extra, channel: channel >>> 0 });
      if (id >>> 0 >= params && op <= 3) return -3;
      if (op <= 2) values[id] = value;
      return 0;
    },
    db_render: (frames) => {
      log.renders.push(frames);
      const heap = new Float32Array(memory.buffer);
      for (let c = 0; c < channels; c++) {
        const base = (outBase >> 2) + c * blockSize;
        for (let i = 0; i < frames; i++) heap[base + i] = position + i + c / 4;
      }
      position += frames;
      room = eventRoom;
      return frames;
    },
    db_output_ptr: (c) => outBase + c * blockSize * 4,
    db_position: () => position,
    // A song at 120 bpm in 4/4 from the first frame, always playing.
    db_transport_playing: () => 1,
    db_transport_beat: () => position / (sampleRate / 2),
    db_transport_bar: () => Math.floor(position / (sampleRate / 2) / 4),
    db_transport_bar_beat: () => 4 * Math.floor(position / (sampleRate / 2) / 4),
    db_transport_bpm: () => 120,
    db_peak: (c) => position + c / 4 - 1,
    db_rms: (c) => c,
    db_value: (id) => values[id],
    db_event_room: () => room,
    db_dropped: () => dropped,
    db_error_ptr: () => 0,
    db_error_len: () => 0,
  };
  return e;
}

/** The sample the fake renders at engine frame `f` on channel `c`. */
export const fakeSample = (f, c) => Math.fround(f + c / 4);
