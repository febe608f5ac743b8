#!/usr/bin/env python3
"""Runs every shell command README.md shows, exactly as written, from the repository's root:
each line of each ```sh block (a `#` comment after a command is the shell's own). `./test` is
the one exception: it is the command that runs this script. A command that exits non-zero, or
runs past 10 minutes, fails the script; files a command writes into the root are removed
afterwards.

    python3 scripts/readme_commands.py
"""
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SELF = "./test"


def commands(readme):
    for block in re.findall(r"^```sh\n(.*?)^```", readme, re.S | re.M):
        for line in block.split("\n"):
            line = line.strip()
            if line and not line.startswith("#"):
                yield line


def main():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        found = list(commands(f.read()))
    if SELF not in found:
        print(f"readme_commands: README.md no longer shows `{SELF}`", file=sys.stderr)
        return 1
    before = set(os.listdir(ROOT))
    failed = 0
    ran = 0
    try:
        for command in found:
            if command == SELF:
                print(f"--- {command}: skipped, it is the command running this")
                continue
            print(f"--- {command}", flush=True)
            start = time.monotonic()
            try:
                done = subprocess.run(["bash", "-c", command], cwd=ROOT, timeout=600)
                code = done.returncode
            except subprocess.TimeoutExpired:
                code = "timeout (600 s)"
            took = time.monotonic() - start
            ran += 1
            if code != 0:
                print(f"FAILED ({code}) after {took:.0f} s: {command}", file=sys.stderr)
                failed += 1
            else:
                print(f"ok in {took:.0f} s")
    finally:
        for made in set(os.listdir(ROOT)) - before:
            path = os.path.join(ROOT, made)
            if os.path.isfile(path):
                os.remove(path)
    if failed:
        print(f"readme_commands: {failed} of {ran} failed", file=sys.stderr)
        return 1
    print(f"readme_commands: all {ran} README commands ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
