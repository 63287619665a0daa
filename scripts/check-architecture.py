#!/usr/bin/env python3
"""Checks that ARCHITECTURE.md names only what exists: every `folder/file` it cites is a file or
folder of the tree (a stem stands for its .hpp/.cpp, `a.{hpp,cpp}` for both, `*` globs), and every
`Type::member` it cites is a type declared in the sources with that member named in them."""
import re
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
FOLDERS = ("base", "protocol", "bytecode", "arch", "trace", "process", "experiment", "server",
           "inproc", "tools", "tests", "scripts", "fuzz", "bench")
text = re.sub(r"```.*?```", "", (root / "ARCHITECTURE.md").read_text(), flags=re.S)
sources = {p: p.read_text() for f in FOLDERS[:10] for p in (root / f).rglob("*")
           if p.suffix in (".cpp", ".hpp")}
declared = set()
for body in sources.values():
    declared.update(re.findall(r"\b(?:class|struct|enum class|using)\s+(\w+)", body))
words = set()
for body in sources.values():
    words.update(re.findall(r"\w+", body))

bad = []
for code in re.findall(r"`([^`]+)`", text):
    for token in re.findall(r"[\w./{},*-]+", code):
        if "/" in token and token.split("/")[0] in FOLDERS:
            path = token.rstrip("/.,")
            names = [path]
            if m := re.match(r"(.*)\.\{(.*)\}$", path):
                names = [f"{m.group(1)}.{ext}" for ext in m.group(2).split(",")]
            for name in names:
                p = root / name
                if "*" in name and any(root.glob(name)):
                    continue
                if not (p.exists() or p.with_suffix(".hpp").exists() or p.with_suffix(".cpp").exists()
                        or Path(str(p) + ".hpp").exists() or Path(str(p) + ".cpp").exists()):
                    bad.append(f"no such file or folder: {name}")
    for owner, member in re.findall(r"\b([A-Z]\w*)::(\w+)", code):
        if owner not in declared:
            bad.append(f"no such type: {owner} (in `{code}`)")
        elif member not in words:
            bad.append(f"no such member: {owner}::{member}")
print("\n".join(sorted(set(bad))) if bad else "ARCHITECTURE.md: every file and type it names exists")
sys.exit(1 if bad else 0)
