#!/usr/bin/env python3
"""Doxygen's INPUT_FILTER for dl's headers: hides each header's implementation section.

A header declares first and defines below a `// ---...--- implementation` banner (STYLE.md). The
reference should show the declarations and their comments, not the out-of-line definitions
(which Doxygen also fails to match to some template specialisations), so every line after the
banner becomes blank, except namespace openings and closings and preprocessor lines, which keep
the file's structure, and entities that carry a /// comment there (a few public functions are
defined only below the banner, as dl::nn::grad::conv2d_input). Line numbers are unchanged. Files
without the banner pass through.
"""
import re
import sys

BANNER = re.compile(r"^// -+ implementation\s*$")
DOC = re.compile(r"^\s*///")
KEEP = re.compile(r"^\s*(#|(inline\s+)?namespace\b[^;=]*\{\s*(//.*)?$|\}\s*//\s*namespace\b)")

with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
    lines = f.read().split("\n")


def braces(line):
    """Net count of { minus } outside literals and // comments."""
    depth, quote, i = 0, None, 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif line.startswith("//", i):
            break
        elif c in "{}":
            depth += 1 if c == "{" else -1
        i += 1
    return depth


hidden = False
out = []
i = 0
while i < len(lines):
    line = lines[i]
    if BANNER.match(line):
        hidden = True
    if hidden and DOC.match(line):
        # A documented entity: its comment, then the declaration through its closing brace or ';'.
        while i < len(lines) and DOC.match(lines[i]):
            out.append(lines[i])
            i += 1
        depth, opened = 0, False
        while i < len(lines):
            line = lines[i]
            out.append(line)
            i += 1
            depth += braces(line)
            opened = opened or "{" in line.split("//")[0]
            if depth <= 0 and (opened or line.split("//")[0].rstrip().endswith(";")):
                break
        continue
    out.append(line if not hidden or KEEP.match(line) else "")
    i += 1
sys.stdout.write("\n".join(out))
