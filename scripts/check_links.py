#!/usr/bin/env python3
"""Checks every relative link in the project's Markdown: the file it names exists, and so
does the heading its `#anchor` names (GitHub's and mdBook's slug rule). Also checks that the
guide's table of contents, its chapters and the doctest crate agree: every chapter under
docs/guide/src is in SUMMARY.md, and every chapter in SUMMARY.md is compiled by
docs/guide/lib.rs. Prints each broken link with its file and line; exit 1 when any is broken.

    python3 scripts/check_links.py
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Markdown the project writes (node_modules and build output are others').
SKIP_DIRS = {"node_modules", "target", ".git", "dist", "corpus", "artifacts", "seeds"}
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def markdown_files():
    for base, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
        for f in files:
            if f.endswith(".md"):
                yield os.path.join(base, f)


def prose_lines(text):
    """(line number, line) outside fenced code blocks, inline code blanked out."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip()
        if fence is None and (stripped.startswith("```") or stripped.startswith("~~~")):
            fence = stripped[:3]
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            continue
        yield n, re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)) if "](" not in m.group(0) else m.group(0), line)


def slug(heading):
    text = re.sub(r"<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        found = set()
        counts = {}
        with open(path, encoding="utf-8") as f:
            for _, line in prose_lines(f.read()):
                m = re.match(r"#{1,6}\s+(.*)", line)
                if m:
                    s = slug(m.group(1).replace(" ", " "))
                    k = counts.get(s, 0)
                    counts[s] = k + 1
                    found.add(s if k == 0 else f"{s}-{k}")
                for a in re.findall(r'<a\s+(?:name|id)="([^"]+)"', line):
                    found.add(a)
        _anchors[path] = found
    return _anchors[path]


def check_links():
    broken = []
    for path in sorted(markdown_files()):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        rel = os.path.relpath(path, ROOT)
        for n, line in prose_lines(text):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue  # http:, https:, mailto:
                file_part, _, anchor = target.partition("#")
                dest = path if not file_part else os.path.normpath(
                    os.path.join(os.path.dirname(path), file_part))
                if not os.path.exists(dest):
                    broken.append(f"{rel}:{n}: {target}: no such file")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    broken.append(f"{rel}:{n}: {target}: no heading `#{anchor}` there")
    return broken


def check_guide():
    guide = os.path.join(ROOT, "docs", "guide")
    src = os.path.join(guide, "src")
    with open(os.path.join(src, "SUMMARY.md"), encoding="utf-8") as f:
        listed = set(re.findall(r"\]\(([^)]+\.md)\)", f.read()))
    chapters = set()
    for base, _, files in os.walk(src):
        for f in files:
            if f.endswith(".md") and f != "SUMMARY.md":
                chapters.add(os.path.relpath(os.path.join(base, f), src))
    with open(os.path.join(guide, "lib.rs"), encoding="utf-8") as f:
        compiled = set(p[len("src/"):] for p in re.findall(r'"(src/[^"]+\.md)"', f.read()))
    problems = [f"docs/guide/src/{c}: a chapter SUMMARY.md does not list" for c in sorted(chapters - listed)]
    problems += [f"docs/guide/src/SUMMARY.md: {c} is listed but docs/guide/lib.rs does not compile it"
                 for c in sorted(listed - compiled)]
    return problems


def main():
    problems = check_links() + check_guide()
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_links: {len(problems)} broken", file=sys.stderr)
        return 1
    print("check_links: every relative link and anchor resolves; the guide's chapters are listed and compiled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
