#!/usr/bin/env python3
"""Turns the ```cpp blocks of a Markdown file (docs/tutorial.md) into a doctest source file, so
that every snippet of the tutorial is compiled and run by the test suite.

    gen_doc_snippets.py docs/tutorial.md build/tests/doc_snippets.cpp

Conventions (the tutorial's introduction states them for readers):

- Every ```cpp block becomes one TEST_CASE named after the heading above it ("Tensors",
  "Autograd", ...; a second test case under the same heading is "Tensors (2)").
- A block whose fence reads ```cpp continued is appended to the previous block's test case, so
  it sees that block's variables: one section can build up a program in several steps.
- A block whose fence reads ```cpp excerpt quotes a program the suite builds and runs elsewhere
  (a sample that needs mpirun) and is not compiled here.
- Lines that must live at namespace scope are taken out of the test body:
  * `#include`, namespace aliases (`namespace nn = dl::nn;`) and using-declarations written at
    column 0 go to the top of the file (they hold for every later snippet too);
  * a declaration starting at column 0 with `struct`, `class`, `template` or `enum` (a network,
    a custom autograd function) runs to the line where its braces close; it is placed before the
    test case, in a namespace of its own, so two sections may both define `struct Net`.
  Everything else is the body of the test case; doctest's CHECK and REQUIRE are available.
- `#line` directives point compiler errors and failed CHECKs at the Markdown file's lines.
- A test case whose code names a dataset under /usr/share/datasets/ is skipped (with a message)
  when that folder does not exist.
- The test program runs in a fresh temporary directory, so files the snippets save ("net.pth")
  land there and are removed at exit.

Plain python3; no third-party modules.
"""
import re
import sys

FENCE = re.compile(r"^(`{3,}|~{3,})\s*([^\s`]*)\s*(.*)$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*(\{#[^}]*\})?\s*#*\s*$")
HOISTED = re.compile(r"^(#include\b|namespace\s+\w+\s*=|using\s)")
DECLARATION = re.compile(r"^(struct|class|template|enum)\b")
DATASET = re.compile(r'"(/usr/share/datasets/[^"/]+)')


class Case:
    def __init__(self, name):
        self.name = name
        self.decls = []  # (line number, text)
        self.body = []   # (line number, text)
        self.datasets = []


def braces(line):
    """Net count of { minus } outside string and character literals and // comments."""
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
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        i += 1
    return depth


def split_block(lines, case, hoisted):
    """Sorts a block's (line number, text) pairs into hoisted lines, declarations and body."""
    i = 0
    while i < len(lines):
        no, text = lines[i]
        if HOISTED.match(text):
            if text.strip() not in (h.strip() for _, h in hoisted):
                hoisted.append((no, text))
            i += 1
        elif DECLARATION.match(text):
            depth, opened = 0, False
            while i < len(lines):
                no, text = lines[i]
                case.decls.append((no, text))
                d = braces(text)
                opened = opened or "{" in text
                depth += d
                i += 1
                if depth <= 0 and (opened or text.rstrip().endswith(";")):
                    break
        else:
            case.body.append((no, text))
            i += 1


def parse(path):
    cases, hoisted = [], []
    heading, counts = "Introduction", {}  # test cases per heading
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            h = HEADING.match(lines[i])
            if h and len(h.group(1)) >= 2:
                heading = h.group(2)
            i += 1
            continue
        fence, lang, info = m.group(1), m.group(2).lower(), m.group(3).split()
        start = i + 1
        i += 1
        while i < len(lines) and not lines[i].startswith(fence[0] * len(fence)):
            i += 1
        block = [(n + 1, lines[n]) for n in range(start, min(i, len(lines)))]
        i += 1
        if lang not in ("cpp", "c++") or "excerpt" in info:
            continue
        if "continued" in info:
            if not cases:
                sys.exit(f"{path}:{start}: a ```cpp continued block needs a ```cpp block before it")
            case = cases[-1]
        else:
            case = Case(heading)
            cases.append(case)
        split_block(block, case, hoisted)
        for _, text in block:
            case.datasets += [d for d in DATASET.findall(text) if d not in case.datasets]
    # A block of hoisted lines only (the includes every snippet shares) makes no test case.
    cases = [c for c in cases if c.decls or c.body]
    for c in cases:
        counts[c.name] = counts.get(c.name, 0) + 1
        if counts[c.name] > 1:
            c.name += f" ({counts[c.name]})"
    return cases, hoisted


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def emit_lines(out, lines, md):
    """Writes lines with a #line directive wherever numbering jumps."""
    expected = None
    for no, text in lines:
        if no != expected:
            out.append(f"#line {no} {md}")
        out.append(text)
        expected = no + 1


def generate(src, cases, hoisted):
    md = c_string(src)
    out = [
        f"// Generated by tests/gen_doc_snippets.py from {src}: do not edit; edit the Markdown.",
        "#include <cstdlib>",
        "#include <filesystem>",
        "#include <string>",
        "#include <unistd.h>",
        "#include <doctest/doctest.h>",
        "",
        "namespace {",
        "// Snippets save files under plain names (\"net.pth\"): run them in a private directory.",
        "struct PrivateDirectory {",
        "  std::filesystem::path dir = std::filesystem::temp_directory_path() /",
        "                              (\"dl_test_docs_\" + std::to_string(::getpid()));",
        "  PrivateDirectory() {",
        "    std::filesystem::create_directories(dir);",
        "    std::filesystem::current_path(dir);",
        "  }",
        "  ~PrivateDirectory() {",
        "    std::error_code ec;",
        "    std::filesystem::current_path(std::filesystem::temp_directory_path(), ec);",
        "    std::filesystem::remove_all(dir, ec);",
        "  }",
        "} const private_directory;",
        "}  // namespace",
        "",
    ]
    emit_lines(out, hoisted, md)
    for k, case in enumerate(cases, 1):
        out += ["", f"namespace doc_snippet_{k} {{"]
        emit_lines(out, case.decls, md)
        out.append(f"TEST_CASE({c_string(case.name)}) {{")
        for d in case.datasets:
            out += [f"  if (!std::filesystem::is_directory({c_string(d)})) {{",
                    f"    MESSAGE({c_string('skipped: ' + d + ' is not installed')});",
                    "    return;",
                    "  }"]
        emit_lines(out, case.body, md)
        out += ["}", f"}}  // namespace doc_snippet_{k}"]
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gen_doc_snippets.py TUTORIAL.md OUTPUT.cpp")
    src, dst = sys.argv[1], sys.argv[2]
    cases, hoisted = parse(src)
    if not cases:
        sys.exit(f"{src}: no ```cpp blocks found")
    text = generate(src, cases, hoisted)
    try:
        with open(dst, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(dst, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
