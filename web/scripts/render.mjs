#!/usr/bin/env node
// npm run render -- PROJECT.toml [--seconds S] [--midi F.mid] --out F.wav
//
// Renders a project in headless Chromium through an OfflineAudioContext and the wasm engine in
// its AudioWorklet (@downbeat/engine's renderOffline), in the blocks `downbeat run --device
// offline` renders, and writes a 32-bit float WAV laid out as the CLI writes it. Files the
// project refers to (a sampler's samples) are read relative to the project and handed over by
// the path written in it. Builds the package, and the wasm with scripts/build-wasm.sh, when
// they are missing. Exit status 0, or 1 with the engine's message (the CLI's) on stderr, or 2
// for bad arguments.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const WEB = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const ENGINE = join(WEB, "packages/engine");
const USAGE = "usage: npm run render -- PROJECT.toml [--seconds S] [--midi F.mid] --out F.wav";

/** The command line, or an error message. */
export function parseArgs(argv) {
  const args = { project: null, seconds: undefined, midi: null, out: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === "--seconds") {
      const s = Number(value());
      if (!(s > 0) || !Number.isFinite(s)) throw new Error(`--seconds must be a number above 0, got ${argv[i]}`);
      args.seconds = s;
    } else if (a === "--midi") args.midi = value();
    else if (a === "--out") args.out = value();
    else if (a.startsWith("-")) throw new Error(`unknown option ${a}`);
    else if (args.project === null) args.project = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  if (args.project === null) throw new Error("no project file given");
  if (args.out === null) throw new Error("--out F.wav is required");
  return args;
}

/**
 * The files a project refers to: every quoted string in it that names an existing file
 * relative to the project's folder, keyed by the string as written (the engine looks files up
 * by that path, as the CLI reads them).
 */
export function referencedFiles(projectPath, text) {
  const files = {};
  const dir = dirname(projectPath);
  for (const m of text.matchAll(/"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)'/g)) {
    const written = m[1] ?? m[2];
    if (!written || written in files) continue;
    const path = resolve(dir, written);
    try {
      if (statSync(path).isFile()) files[written] = readFileSync(path);
    } catch {
      // not a file: a node name, a mode, an edge
    }
  }
  return files;
}

/** Builds what is missing: the TypeScript packages, then the wasm. */
export function ensureBuilt() {
  const ringbuf = join(WEB, "packages/ringbuf/dist/index.js");
  if (!existsSync(ringbuf) || !existsSync(join(ENGINE, "dist/index.js")) || !existsSync(join(ENGINE, "dist/processor.js"))) {
    console.error("render: building @downbeat/ringbuf and @downbeat/engine");
    execFileSync("npm", ["run", "--silent", "build"], { cwd: WEB, stdio: ["ignore", 2, 2] });
  }
  if (!existsSync(join(ENGINE, "dist/downbeat_engine.wasm"))) {
    const script = join(ENGINE, "scripts/build-wasm.sh");
    if (!existsSync(script)) throw new Error(`${script} is missing: cannot build the wasm engine`);
    console.error("render: building the wasm engine");
    execFileSync("bash", [script], { cwd: WEB, stdio: ["ignore", 2, 2] });
  }
}

/**
 * Renders in headless Chromium; resolves to { channels: Float32Array[], sampleRate, frames }.
 * Rejects with an Error whose `engine` is true when the engine refused the project (its
 * message is then the CLI's).
 */
export async function renderInChromium({ project, seconds, midi }) {
  const { startServer } = await import("../demo/serve.mjs");
  const { EXECUTABLE, launchChromium } = await import("../test-browser/chromium.mjs");
  if (!existsSync(EXECUTABLE)) throw new Error(`no Chromium at ${EXECUTABLE} (apt-get install chromium, or set CHROMIUM=...)`);
  const text = readFileSync(project, "utf8");
  const files = Object.fromEntries(Object.entries(referencedFiles(project, text)).map(([k, v]) => [k, v.toString("base64")]));
  const midiBytes = midi ? readFileSync(midi).toString("base64") : null;
  const server = await startServer({ port: 0, demoRoot: WEB });
  let close;
  try {
    let browser;
    ({ browser, close } = await launchChromium());
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(new URL("scripts/render.html", server.url).href);
    const result = await page.evaluate(
      async ({ text, name, files, midi, seconds }) => {
        const { renderOffline } = await import("/packages/engine/dist/index.js");
        const bytes = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        try {
          const r = await renderOffline(text, {
            name,
            seconds,
            midi: midi ? bytes(midi) : undefined,
            files: Object.fromEntries(Object.entries(files).map(([k, v]) => [k, bytes(v)])),
          });
          window.__render = r;
          return { sampleRate: r.sampleRate, frames: r.frames, channels: r.channels.length };
        } catch (e) {
          return { error: String(e?.message ?? e), engine: e?.name === "EngineError" };
        }
      },
      { text, name: project, files, midi: midiBytes, seconds },
    );
    if (result.error !== undefined) {
      const err = new Error(result.error);
      err.engine = result.engine;
      throw err;
    }
    if (errors.length > 0) throw new Error(`the page failed: ${errors.join("; ")}`);
    // Bring the samples over in slices: one evaluate per 1 Mi samples of a channel.
    const channels = [];
    const SLICE = 1 << 20;
    for (let c = 0; c < result.channels; c++) {
      const data = new Float32Array(result.frames);
      for (let at = 0; at < result.frames; at += SLICE) {
        const b64 = await page.evaluate(
          ({ c, at, n }) => {
            const s = window.__render.channels[c].subarray(at, at + n);
            const u8 = new Uint8Array(s.buffer, s.byteOffset, s.byteLength);
            let bin = "";
            for (let i = 0; i < u8.length; i += 0x8000) bin += String.fromCharCode.apply(null, u8.subarray(i, i + 0x8000));
            return btoa(bin);
          },
          { c, at, n: SLICE },
        );
        const buf = Buffer.from(b64, "base64");
        data.set(new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4), at);
      }
      channels.push(data);
    }
    return { channels, sampleRate: result.sampleRate, frames: result.frames };
  } finally {
    await close?.();
    await server.close();
  }
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`render: ${e.message}\n${USAGE}`);
    process.exit(2);
  }
  try {
    ensureBuilt();
    const { encodeWav } = await import("../packages/engine/dist/wav.js");
    const r = await renderInChromium(args);
    writeFileSync(args.out, encodeWav(r.channels, r.sampleRate));
    console.log(`wrote ${args.out} (${(r.frames / r.sampleRate).toFixed(2)} s, ${r.frames} frames, ${r.channels.length} channels)`);
  } catch (e) {
    console.error(e.engine ? `error: ${e.message}` : `render: ${e.message}`);
    process.exit(1);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
