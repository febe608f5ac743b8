#!/usr/bin/env python3
"""Runs the shell commands the docs show, from the repository's root, with the release build's
`downbeat` first on the PATH (the guide writes `downbeat run ...` for an installed binary).

* README.md: every line of every ```sh block, exactly as written. `./test` is the one
  exception: it is the command that runs this script.
* The guide (docs/guide/src): every ```sh block. A block that starts a command in the
  background (`... &`, then `wait`) runs as one script; any other block runs line by line.
  The few commands a test machine cannot run as written are listed in GUIDE_SKIPPED with the
  reason and the test that covers them instead, and a command that plays until it is stopped
  is stopped after a few seconds (GUIDE_STOPPED) and passes if it was still playing. A skip
  that no longer matches any command fails the script, so the list cannot go stale.

A command that exits non-zero, or runs past 10 minutes, fails the script; files a command
writes into the root are removed afterwards.

    python3 scripts/doc_commands.py
"""
import glob
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SELF = "./test"

# A substring of the command -> why it is not run here, and what runs it instead.
GUIDE_SKIPPED = {
    "--device system": "plays on the computer's speakers; crates/cli/tests/system.rs runs the "
    "system device against a PulseAudio sink",
    "--features system -- devices": "lists the sound cards, from a build of its own; "
    "crates/cli/tests/system.rs runs `downbeat devices` against PulseAudio",
    "--features system -- latency": "needs a loopback cable; crates/cli/tests/system.rs and "
    "jack.rs measure the round trip through PulseAudio and JACK loopbacks",
    "jackd -d alsa": "starts JACK on a sound card; crates/cli/tests/jack.rs starts its own",
    "--device jack": "needs a JACK server; crates/cli/tests/jack.rs and jack_transport.rs run "
    "the JACK device and its transport against jackd",
    "pw-jack": "needs PipeWire; the JACK tests run against jackd",
    "jack_transport": "moves a JACK server's transport; crates/cli/tests/jack_transport.rs "
    "drives jack_transport",
    "overdrive-lv2.toml": "reads an in.wav of the reader's own through an LV2 build; "
    "crates/plugin/tests/lv2_cli.rs runs the same project",
    "cd web": "web/ci.sh installs, builds and runs the web packages (npm ci, npm run build, "
    "render against the CLI in test-browser/engine-*.test.mjs)",
    "npm ci": "web/ci.sh runs it, from web/",
    "npm run play": "serves the page until it is stopped; test-browser/ opens it in Chromium",
    "npm run render": "test-browser/engine-*.test.mjs runs it against `downbeat run --device "
    "offline`",
    "pip install ./python": "installs the package into the reader's Python; python/ci.sh "
    "installs it into a fresh virtual environment and runs its tests",
    "ray start": "starts a Ray cluster; python/tests/test_ray.py starts a two-node one on "
    "127.0.0.1",
}

# The command -> seconds after which it is stopped (it plays until Ctrl-C).
GUIDE_STOPPED = {
    "cargo run --release -- run examples/projects/hello.toml": 5,
}


def blocks(markdown):
    return re.findall(r"^```sh\n(.*?)^```", markdown, re.S | re.M)


def lines(block):
    for line in block.split("\n"):
        line = line.strip()
        if line and not line.startswith("#"):
            yield line


def bare(line):
    """The command without the comment after it."""
    return re.sub(r"\s+#.*$", "", line)


def joined(block):
    return re.sub(r"\\\n\s*", "", block)


def run(command, stop_after):
    env = dict(os.environ)
    env["PATH"] = os.path.join(ROOT, "target", "release") + os.pathsep + env["PATH"]
    start = time.monotonic()
    if stop_after is not None:
        proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=ROOT, env=env)
        try:
            code = proc.wait(timeout=stop_after)
            result = f"exited ({code}) before it was stopped"
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait()
            result = 0
        return result, time.monotonic() - start
    try:
        done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, timeout=600)
        code = done.returncode
    except subprocess.TimeoutExpired:
        code = "timeout (600 s)"
    return code, time.monotonic() - start


def main():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = [("README.md", line, None) for b in blocks(f.read()) for line in lines(b)]
    if not any(command == SELF for _, command, _ in readme):
        print(f"doc_commands: README.md no longer shows `{SELF}`", file=sys.stderr)
        return 1
    guide = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs/guide/src/**/*.md"), recursive=True)):
        where = os.path.relpath(path, ROOT)
        with open(path, encoding="utf-8") as f:
            for block in blocks(joined(f.read())):
                found = list(lines(block))
                if any(bare(line).endswith("&") for line in found):
                    guide.append((where, "\n".join(found), None))
                else:
                    guide += [(where, line, GUIDE_STOPPED.get(bare(line))) for line in found]
    unused = [s for s in GUIDE_SKIPPED if not any(s in c for _, c, _ in guide)]
    unused += [s for s in GUIDE_STOPPED if not any(s == bare(c) for _, c, _ in guide)]
    if unused:
        print(f"doc_commands: no guide command matches {unused}; update the lists", file=sys.stderr)
        return 1
    before = set(os.listdir(ROOT))
    failed = 0
    ran = 0
    skipped = 0
    try:
        for where, command, stop_after in readme + guide:
            shown = command.replace("\n", "; ")
            if command == SELF:
                print(f"--- {where}: {command}: skipped, it is the command running this")
                continue
            why = next((r for s, r in GUIDE_SKIPPED.items() if s in command), None)
            if where != "README.md" and why:
                print(f"--- {where}: {shown}: skipped, {why}")
                skipped += 1
                continue
            print(f"--- {where}: {shown}", flush=True)
            code, took = run(command, stop_after)
            ran += 1
            if code != 0:
                print(f"FAILED ({code}) after {took:.0f} s: {where}: {shown}", file=sys.stderr)
                failed += 1
            else:
                stopped = " (stopped while playing, as meant)" if stop_after else ""
                print(f"ok in {took:.0f} s{stopped}")
    finally:
        for made in set(os.listdir(ROOT)) - before:
            path = os.path.join(ROOT, made)
            if os.path.isfile(path):
                os.remove(path)
    if failed:
        print(f"doc_commands: {failed} of {ran} failed", file=sys.stderr)
        return 1
    print(f"doc_commands: all {ran} commands of README.md and the guide ran ({skipped} skipped, "
          "each with its reason above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
