#!/usr/bin/env python3
"""check_opt_docs.py - the option tables in docs/ are the programs' own.

Every program makes the Markdown table of its options from the table it
parses with (--help-markdown, src/common/opt_doc.c).  In docs/, each such
table sits between

    <!-- generated: COMMAND -->
    ...
    <!-- end generated -->

and this script runs COMMAND (from BIN_DIR, in an environment without
GPUFL_* variables) and compares.  A difference fails with a diff; --write
puts the generated tables into the docs instead (then review and commit).

usage: check_opt_docs.py BIN_DIR DOCS_DIR [--write]
"""
import difflib
import os
import re
import subprocess
import sys

BLOCK = re.compile(r"(<!-- generated: (?P<cmd>[^>]*?) -->\n)(?P<body>.*?)"
                   r"(<!-- end generated -->)", re.S)


def generate(bin_dir, cmd):
    argv = cmd.split()
    exe = os.path.join(bin_dir, argv[0])
    if not os.access(exe, os.X_OK):
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    r = subprocess.run([exe] + argv[1:], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env,
                       timeout=60)
    if r.returncode != 0:
        sys.exit("%s: exit %d: %s" % (cmd, r.returncode, r.stderr.strip()))
    return r.stdout


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    bin_dir, docs = sys.argv[1], sys.argv[2]
    write = "--write" in sys.argv[3:]
    checked, failed = 0, 0
    for name in sorted(os.listdir(docs)):
        if not name.endswith(".md"):
            continue
        path = os.path.join(docs, name)
        with open(path) as f:
            text = f.read()
        out, pos = [], 0
        for m in BLOCK.finditer(text):
            want = generate(bin_dir, m.group("cmd"))
            out.append(text[pos:m.start("body")])
            pos = m.end("body")
            if want is None:
                print("skip %s: %s is not built" % (name, m.group("cmd")))
                out.append(m.group("body"))
                continue
            checked += 1
            out.append(want)
            if want != m.group("body") and not write:
                failed += 1
                print("%s: the table of `%s` differs from the program's:"
                      % (name, m.group("cmd")))
                sys.stdout.writelines(difflib.unified_diff(
                    m.group("body").splitlines(True), want.splitlines(True),
                    "docs/" + name, m.group("cmd")))
        out.append(text[pos:])
        if write and "".join(out) != text:
            with open(path, "w") as f:
                f.write("".join(out))
            print("wrote %s" % path)
    print("%d tables checked, %d differ" % (checked, failed))
    if not checked:
        sys.exit("no generated table found")
    sys.exit(1 if failed else 0)


main()
