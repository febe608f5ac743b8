// Every ```js example in the package's TSDoc runs: examples that cannot run are examples that
// lie. Each runs as its own module; one without an import gets the package's exports in scope.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync, writeFileSync, rmSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import * as lib from "@downbeat/ringbuf";

const src = new URL("../src/", import.meta.url);
const examples = [];
for (const file of readdirSync(src).filter((f) => f.endsWith(".ts"))) {
  const lines = readFileSync(new URL(file, src), "utf8").split("\n");
  let start = -1;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i].replace(/^\s*\* ?/, "");
    if (start < 0 && text.startsWith("```js")) start = i;
    else if (start >= 0 && text.startsWith("```")) {
      const body = lines.slice(start + 1, i).map((l) => l.replace(/^\s*\* ?/, ""));
      examples.push({ where: `src/${file}:${start + 1}`, code: body.join("\n") });
      start = -1;
    }
  }
}

test("the package's TSDoc has examples to run", () => {
  assert.ok(examples.length >= 19, `only ${examples.length} examples found`);
});

// Modules written next to this file resolve "@downbeat/ringbuf" like the tests do.
const dir = mkdtempSync(join(new URL(".", import.meta.url).pathname, ".examples-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
const prelude = `import { ${Object.keys(lib).join(", ")} } from "@downbeat/ringbuf";\n`;

for (const [i, { where, code }] of examples.entries()) {
  test(`example at ${where} runs`, async () => {
    const file = join(dir, `example-${i}.mjs`);
    writeFileSync(file, (code.includes("import ") ? "" : prelude) + code + "\n");
    await import(file);
  });
}
