// After tsc: make dist/ loadable as plain ES modules in a browser, an AudioWorklet and a Worker,
// none of which resolve bare specifiers. dist/ringbuf.js re-exports "@downbeat/ringbuf"; point it
// at a copy of that package's dist in dist/ringbuf/.
import { cpSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
const require = createRequire(import.meta.url);
const ringbufDist = dirname(require.resolve("@downbeat/ringbuf"));
if (!existsSync(join(ringbufDist, "index.js"))) {
  console.error(`${ringbufDist}/index.js is missing: build @downbeat/ringbuf first`);
  process.exit(1);
}
cpSync(ringbufDist, join(dist, "ringbuf"), { recursive: true });
for (const file of ["ringbuf.js", "ringbuf.d.ts"]) {
  const path = join(dist, file);
  const text = readFileSync(path, "utf8");
  const fixed = text.replaceAll('"@downbeat/ringbuf"', '"./ringbuf/index.js"');
  if (fixed === text) {
    console.error(`${path} does not import "@downbeat/ringbuf": the build step is out of date`);
    process.exit(1);
  }
  writeFileSync(path, fixed);
}
