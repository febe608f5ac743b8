#!/usr/bin/env node
// npm run play: serves the repository (so that pages reach both web/ and examples/) with the
// COOP/COEP headers SharedArrayBuffer needs, and prints the URL of scripts/play.html, the
// ten-line page of web/README.md that plays examples/projects/hello.toml. Local only (127.0.0.1).
//
//   npm run play [-- PORT]
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer } from "../demo/serve.mjs";
import { ensureBuilt } from "./render.mjs";

const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));
ensureBuilt();
const port = Number(process.argv[2] ?? 0);
const { url } = await startServer({ port, demoRoot: ROOT });
console.log(`open ${url}web/scripts/play.html  (serving ${ROOT})`);
