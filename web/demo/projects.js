// Downbeat project files generated for a count, shared by the demo pages (browser), the
// browser tests and the benchmark (Node): the same text goes to the wasm engine and, in the
// tests, to the native CLI, so both run one definition.

/** MIDI note of string `i` of the stress page: a semitone each over three octaves from A2 (110 Hz), as the JavaScript strings are tuned. */
export const stringNote = (i) => 45 + (i % 36);

/** Node name of string `i` (zero-padded so the names sort like the indices). */
export const stringName = (i) => `k${String(i).padStart(5, "0")}`;

/** Strings per `strings` node in `stringsProject`, as the JavaScript strings go 100 to a worklet. */
export const BANK_STRINGS = 100;

/** Node name of the `strings` bank that plays string `i` in `stringsProject`. */
export const stringBank = (i) => `b${String(Math.floor(i / BANK_STRINGS)).padStart(4, "0")}`;

/** Node name of oscillator `i` of the sine bench. */
export const sineName = (i) => `s${String(i).padStart(5, "0")}`;

function header(o, edges) {
  const rate = o.sampleRate ?? 48000;
  const block = o.blockSize ?? 128;
  return [`sample_rate = ${rate}`, `block_size = ${block}`, "edges = [", ...edges.map((e) => `    "${e}",`), "]", ""];
}

function positive(n, what) {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`${what}: expected a whole number >= 1, got ${n}`);
  return n;
}

/** The mono `mix` and `output` that N strings go through, at the JavaScript strings' overall gain, 0.25 / sqrt(N). */
function stringsMix(n) {
  const gainDb = 20 * Math.log10(0.25 / Math.sqrt(n));
  return ["[nodes.mix]", 'type = "mix"', "channels = 1", `gain_db = ${gainDb.toFixed(3)}`, "", "[nodes.out]", 'type = "output"', "channels = 1", ""];
}

/**
 * N `karplus` strings summed by a `mix` into the output, all mono (the strings are mono in the
 * JavaScript processor too; the destination plays one channel on both speakers): the
 * Karplus-Strong stress page's third transport. The strings are silent until their first note (the built-in pattern is pushed an
 * hour away with `offset`, and a received note silences it for good); a strum is a note on of
 * instrument `stringName(i)` at `stringNote(i)`, its velocity the strength. `length` lets a
 * strum ring out (the node cuts a note `length` seconds after it starts).
 *
 * @param {number} n strings
 * @param {{ sampleRate?: number, blockSize?: number, decay?: number }} [o]
 */
export function karplusProject(n, o = {}) {
  positive(n, "karplusProject");
  const edges = [];
  for (let i = 0; i < n; i++) edges.push(`${stringName(i)} -> mix`);
  edges.push("mix -> out");
  const lines = [`# ${n} Karplus-Strong strings summed into the output (web/demo/projects.js).`, ...header(o, edges)];
  for (let i = 0; i < n; i++) {
    lines.push(
      `[nodes.${stringName(i)}]`,
      'type = "karplus"',
      "channels = 1",
      `notes = [${stringNote(i)}]`,
      "offset = 3600.0",
      "interval = 60.0",
      "length = 30.0",
      `decay = ${o.decay ?? 0.996}`,
      "amp = 1.0",
      `seed = ${i + 1}`,
      "",
    );
  }
  lines.push(...stringsMix(n));
  return lines.join("\n");
}

/**
 * The same N strings as `karplusProject`, played as voices of `strings` nodes, 100 to a node
 * (the last holds the rest) summed by a `mix`: the stress page's wasm transport. A `strings`
 * node is a bank of the `karplus` node's strings that computes four at a time, so it costs
 * less per string than a node each. A strum of string `i` is a note on of node `stringBank(i)`
 * at `stringNote(i)`: it plucks the bank's next string in turn, so a strum of every string
 * plucks each once. String `i` is seeded `i + 1`, as in `karplusProject`.
 *
 * @param {number} n strings
 * @param {{ sampleRate?: number, blockSize?: number, decay?: number }} [o]
 */
export function stringsProject(n, o = {}) {
  positive(n, "stringsProject");
  const banks = Math.ceil(n / BANK_STRINGS);
  const edges = [];
  for (let b = 0; b < banks; b++) edges.push(`${stringBank(b * BANK_STRINGS)} -> mix`);
  edges.push("mix -> out");
  const lines = [`# ${n} Karplus-Strong strings in ${banks} banks summed into the output (web/demo/projects.js).`, ...header(o, edges)];
  for (let b = 0; b < banks; b++) {
    lines.push(
      `[nodes.${stringBank(b * BANK_STRINGS)}]`,
      'type = "strings"',
      "channels = 1",
      `voices = ${Math.min(BANK_STRINGS, n - b * BANK_STRINGS)}`,
      "length = 30.0",
      `decay = ${o.decay ?? 0.996}`,
      "amp = 1.0",
      `seed = ${b * BANK_STRINGS + 1}`,
      "",
    );
  }
  lines.push(...stringsMix(n));
  return lines.join("\n");
}

/**
 * N mono `sine` oscillators summed into a mono output, spread over 110..1760 Hz, each at 0.5/N so
 * the sum stays below full scale: the wasm side of the sine bench (the native side is N
 * `OscillatorNode`s, mono, into one `GainNode`).
 *
 * @param {number} n oscillators
 * @param {{ sampleRate?: number, blockSize?: number }} [o]
 */
export function sineProject(n, o = {}) {
  positive(n, "sineProject");
  const edges = [];
  for (let i = 0; i < n; i++) edges.push(`${sineName(i)} -> out`);
  const lines = [`# ${n} sine oscillators summed into the output (web/demo/projects.js).`, ...header(o, edges)];
  const amp = 0.5 / n;
  for (let i = 0; i < n; i++) {
    lines.push(`[nodes.${sineName(i)}]`, 'type = "sine"', "channels = 1", `freq = ${sineFreq(i, n).toFixed(4)}`, `amp = ${amp}`, "");
  }
  lines.push("[nodes.out]", 'type = "output"', "channels = 1", "");
  return lines.join("\n");
}

/** Frequency of oscillator `i` of `n`: four octaves from 110 Hz, evenly in pitch. */
export const sineFreq = (i, n) => 110 * Math.pow(2, (4 * i) / Math.max(1, n));

/** Voices per `synth` node of the synth bench (the node type's maximum). */
export const VOICES_PER_SYNTH = 1024;

/** Node name of the synth that plays voice `k` of the synth bench. */
export const voiceSynth = (k) => `keys${Math.floor(k / VOICES_PER_SYNTH)}`;

/**
 * `voices` synth voices into the output: one `synth` node (`keys0`), or more when `voices` is
 * above a node's maximum (`keys1`, ... each of up to 1024 voices): the synth-voices bench, every
 * voice held by a note on of `voiceNote(k)` on channel `voiceChannel(k)` to `voiceSynth(k)`.
 *
 * @param {number} voices
 * @param {{ sampleRate?: number, blockSize?: number }} [o]
 */
export function synthProject(voices, o = {}) {
  positive(voices, "synthProject");
  const nodes = Math.ceil(voices / VOICES_PER_SYNTH);
  const edges = [];
  for (let j = 0; j < nodes; j++) edges.push(`keys${j} -> out`);
  const lines = [`# ${voices} synth voices into the output (web/demo/projects.js).`, ...header(o, edges)];
  for (let j = 0; j < nodes; j++) {
    const v = Math.min(VOICES_PER_SYNTH, voices - j * VOICES_PER_SYNTH);
    lines.push(
      `[nodes.keys${j}]`,
      'type = "synth"',
      'wave = "saw"',
      `voices = ${v}`,
      "attack = 0.005",
      "release = 0.1",
      `amp = ${(0.5 / voices).toPrecision(6)}`,
      "",
    );
  }
  lines.push("[nodes.out]", 'type = "output"', "");
  return lines.join("\n");
}

/** MIDI channel (0..15) of held voice `k`: 84 notes a channel, so up to 1344 voices a synth are distinct. */
export const voiceChannel = (k) => Math.floor((k % VOICES_PER_SYNTH) / 84) % 16;

/** Note of held voice `k` of the synth bench: C1 up, 84 notes, then the next channel (`voiceChannel`). */
export const voiceNote = (k) => 24 + ((k % VOICES_PER_SYNTH) % 84);
