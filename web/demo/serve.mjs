#!/usr/bin/env node
// A tiny static server for the demo: `web/demo/` at `/`, `web/packages/ringbuf/dist/` at
// `/ringbuf/`, `web/packages/engine/dist/` (`@downbeat/engine` and its wasm) at `/engine/` and
// `examples/projects/` at `/projects/`, with the headers that make a page cross-origin isolated (so that it gets
// SharedArrayBuffer) on every response. No dependencies.
//
//   node web/demo/serve.mjs [port]      # or PORT=8080 node web/demo/serve.mjs; default: random
//
// For tests: `const { url, close } = await startServer({ port: 0 })`.

import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
export const DEMO_ROOT = resolve(here);
export const RINGBUF_ROOT = resolve(here, "../packages/ringbuf/dist");
export const ENGINE_ROOT = resolve(here, "../packages/engine/dist");
export const PROJECTS_ROOT = resolve(here, "../../examples/projects");

const MIME = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".ts": "text/plain; charset=utf-8",
  ".md": "text/markdown; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".wasm": "application/wasm",
  ".toml": "text/plain; charset=utf-8",
  ".mid": "audio/midi",
};

/** Headers on every response, errors included. */
const ISOLATION = {
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
  "Cross-Origin-Resource-Policy": "same-origin",
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
};

/** Maps a URL path to a file under one of the roots, or null if it escapes them. */
function resolvePath(pathname, mounts) {
  for (const [prefix, root] of mounts) {
    if (pathname === prefix.slice(0, -1)) pathname = prefix; // "/ringbuf" -> "/ringbuf/"
    if (!pathname.startsWith(prefix)) continue;
    let rel = pathname.slice(prefix.length);
    if (rel === "" || rel.endsWith("/")) rel += "index.html";
    const file = normalize(join(root, rel));
    if (file !== root && !file.startsWith(root + sep)) return null;
    return file;
  }
  return null;
}

/**
 * Starts the server on 127.0.0.1.
 *
 * @param {{ port?: number, host?: string, demoRoot?: string, ringbufRoot?: string, engineRoot?: string, quiet?: boolean }} [options]
 *   `port` 0 (default) picks a free port. `ringbufRoot` / `engineRoot` can point `/ringbuf/` /
 *   `/engine/` at another build.
 * @returns {Promise<{ server: import("node:http").Server, port: number, url: string, close: () => Promise<void> }>}
 */
export async function startServer(options = {}) {
  const host = options.host ?? "127.0.0.1";
  const mounts = [
    ["/ringbuf/", resolve(options.ringbufRoot ?? RINGBUF_ROOT)],
    ["/engine/", resolve(options.engineRoot ?? ENGINE_ROOT)],
    ["/projects/", PROJECTS_ROOT],
    ["/", resolve(options.demoRoot ?? DEMO_ROOT)],
  ];
  const server = createServer(async (req, res) => {
    const send = (status, body, type = "text/plain; charset=utf-8", extra = {}) => {
      res.writeHead(status, { ...ISOLATION, "Content-Type": type, ...extra });
      res.end(req.method === "HEAD" ? undefined : body);
    };
    if (req.method !== "GET" && req.method !== "HEAD") {
      send(405, "method not allowed\n", undefined, { Allow: "GET, HEAD" });
      return;
    }
    let pathname;
    try {
      pathname = decodeURIComponent(new URL(req.url, "http://x").pathname);
    } catch {
      send(400, "bad request\n");
      return;
    }
    if (pathname.includes("\0")) {
      send(400, "bad request\n");
      return;
    }
    const file = resolvePath(pathname, mounts);
    if (!file) {
      send(404, "not found\n");
      return;
    }
    try {
      const info = await stat(file);
      if (info.isDirectory()) {
        send(301, "", undefined, { Location: pathname.replace(/\/?$/, "/") });
        return;
      }
      const body = await readFile(file);
      send(200, body, MIME[extname(file).toLowerCase()] ?? "application/octet-stream", {
        "Content-Length": String(body.length),
      });
    } catch (e) {
      send(404, `not found${e.code === "ENOENT" ? "" : ` (${e.code})`}\n`);
    }
  });
  await new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", fail);
      ok();
    });
  });
  const { port } = server.address();
  const url = `http://${host}:${port}/`;
  return {
    server,
    port,
    url,
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections?.();
        server.close(() => ok());
      }),
  };
}

const isMain = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const arg = process.argv[2];
  const port = Number(arg ?? process.env.PORT ?? 0);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`usage: node serve.mjs [port]   (got ${JSON.stringify(arg ?? process.env.PORT)})`);
    process.exit(2);
  }
  const { url } = await startServer({ port });
  console.log(`Downbeat demo: ${url}  (engine: ${url}engine.html, offline render check: ${url}offline.html)`);
  console.log(`serving ${DEMO_ROOT} at /, ${RINGBUF_ROOT} at /ringbuf/, ${ENGINE_ROOT} at /engine/, ${PROJECTS_ROOT} at /projects/`);
}
