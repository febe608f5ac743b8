#!/usr/bin/env python3
"""Checks the verdicts of `downbeat audit DIR --json` against the expected ones.

    scripts/check_audit.py EXPECTED.tsv AUDIT.json [--status N] [--doc DOC.md]

EXPECTED.tsv has one line per plugin, `format<TAB>id<TAB>result<TAB>phase` (`phase` is the
phase of a crash, `-` otherwise; `#` starts a comment). `clean|violations` accepts either, for
a plugin whose verdict does not depend on the host's code alone (a comment beside it says
why); the page then says `clean or N violation(s)`. Every row of AUDIT.json (the array
`downbeat audit DIR --json` prints) must be one of those plugins with that result, and for a
crash that phase (not the signal: a use-after-free may end in SIGSEGV or SIGABRT); every
expected plugin must have its row.

--status N: the audit's exit status, which must be the one the expected verdicts imply (0
when all are clean, 3 when some have violations and none crashed or was refused, 2
otherwise).

--doc DOC.md: the table of DOC.md whose header is `| plugin | CLAP | LV2 |` (docs/AUDIT.md)
must publish the same verdicts as EXPECTED.tsv, so that the page and the check cannot drift
apart. A zam-plugins row is named by the plugin's name (CLAP id `com.zamaudio.NAME`, LV2 URI
`urn:zamaudio:NAME`); another row gives its LV2 URI in backquotes.

Exit 0 when everything agrees; 1, listing every disagreement, otherwise.
"""
import argparse
import collections
import json
import re
import sys


def read_expected(path):
    expected = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            cells = line.split("\t")
            if len(cells) != 4:
                sys.exit(f"{path}:{n}: expected format, id, result, phase separated by tabs: {line!r}")
            fmt, plugin, result, phase = cells
            if result not in ("clean", "violations", "crashed", "refused", "clean|violations"):
                sys.exit(f"{path}:{n}: unknown result {result!r}")
            if (result == "crashed") != (phase != "-"):
                sys.exit(f"{path}:{n}: a crash, and only a crash, names its phase")
            if (fmt, plugin) in expected:
                sys.exit(f"{path}:{n}: {fmt} {plugin} is listed twice")
            expected[(fmt, plugin)] = (result, phase)
    return expected


def doc_verdict(cell, where):
    """The (result, phase) a cell of the published table says, or None for `-`."""
    if cell == "-":
        return None
    if cell == "clean":
        return ("clean", "-")
    if re.fullmatch(r"clean or \d+ violations?( \(.*\))?", cell):
        return ("clean|violations", "-")
    if re.fullmatch(r"\d+ violations?( \(.*\))?", cell):
        return ("violations", "-")
    crash = re.search(r"crashed\**\s+in\s+`(\w+)`", cell)
    if crash:
        return ("crashed", crash.group(1))
    sys.exit(f"{where}: cannot read a verdict in {cell!r}")


def read_doc(path):
    """The verdicts of the `| plugin | CLAP | LV2 |` table of the page at `path`."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        start = lines.index("| plugin | CLAP | LV2 |")
    except ValueError:
        sys.exit(f"{path}: no table with the header `| plugin | CLAP | LV2 |`")
    published = {}
    for n in range(start + 2, len(lines)):
        line = lines[n]
        if not line.startswith("|"):
            break
        where = f"{path}:{n + 1}"
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3:
            sys.exit(f"{where}: expected three cells: {line!r}")
        name, clap, lv2 = cells
        uri = re.search(r"`([^`]+)`", name)
        ids = {"clap": None, "lv2": uri.group(1)} if uri else {
            "clap": f"com.zamaudio.{name}",
            "lv2": f"urn:zamaudio:{name}",
        }
        for fmt, cell in (("clap", clap), ("lv2", lv2)):
            verdict = doc_verdict(cell, where)
            if verdict is None:
                continue
            if ids[fmt] is None:
                sys.exit(f"{where}: a {fmt} verdict for a row that names no {fmt} id")
            published[(fmt, ids[fmt])] = verdict
    return published


def describe(verdict):
    result, phase = verdict
    return f"crashed in {phase}" if result == "crashed" else result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("expected")
    parser.add_argument("audit")
    parser.add_argument("--status", type=int)
    parser.add_argument("--doc")
    args = parser.parse_args()

    expected = read_expected(args.expected)
    with open(args.audit, encoding="utf-8") as f:
        try:
            rows = json.load(f)
        except json.JSONDecodeError as e:
            sys.exit(f"{args.audit}: not the JSON of `downbeat audit DIR --json`: {e}")
    problems = []
    seen = set()
    for row in rows:
        key = (row["format"], row["id"])
        if row["id"] is None:
            problems.append(f"{row['path']}: no plugin id, {row['result']}: {row.get('reason')}")
            continue
        if key in seen:
            problems.append(f"{key[0]} {key[1]}: audited twice")
        seen.add(key)
        want = expected.get(key)
        got = (row["result"], row["phase"] if row["result"] == "crashed" else "-")
        if want is None:
            problems.append(f"{key[0]} {key[1]}: not in {args.expected} (audited: {describe(got)})")
        elif got[1] != want[1] or got[0] not in want[0].split("|"):
            detail = f"; reason: {row['reason']}" if row.get("reason") else ""
            signal = f", signal {row['signal']}" if row.get("signal") is not None else ""
            problems.append(
                f"{key[0]} {key[1]}: expected {describe(want)}, audited {describe(got)}"
                f"{signal} (violations: {row['violations']}){detail}"
            )
    for key in expected:
        if key not in seen:
            problems.append(f"{key[0]} {key[1]}: expected {describe(expected[key])}, but no row")

    results = {r for v in expected.values() for r in v[0].split("|")}
    if results <= {"clean"}:
        want_status = 0
    elif results <= {"clean", "violations"}:
        want_status = 3
    else:
        want_status = 2
    if args.status is not None and args.status != want_status:
        problems.append(f"the audit exited {args.status}, expected {want_status} for these verdicts")

    if args.doc:
        published = read_doc(args.doc)
        for key in sorted(set(published) | set(expected)):
            if published.get(key) != expected.get(key):
                doc = describe(published[key]) if key in published else "nothing"
                tsv = describe(expected[key]) if key in expected else "nothing"
                problems.append(f"{key[0]} {key[1]}: {args.doc} publishes {doc}, {args.expected} expects {tsv}")

    if problems:
        print(f"downbeat audit: {len(problems)} disagreement(s) with {args.expected}:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    counts = collections.Counter(v[0] for v in expected.values())
    summary = ", ".join(f"{n} {r}" for r, n in sorted(counts.items()))
    print(f"audit verdicts as expected: {len(rows)} plugins ({summary})"
          + (f", as {args.doc} publishes" if args.doc else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
