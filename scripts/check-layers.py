#!/usr/bin/env python3
"""Checks that every #include crosses layers only downwards (ARCHITECTURE.md):
a folder may include its own headers and those of the folders (or single headers)
listed for it here."""
import re
import sys
from pathlib import Path

ALLOWED = {
    "base": set(),
    "protocol": {"base"},
    "bytecode": {"base"},
    "arch": {"base", "protocol", "bytecode"},
    "trace": {"base", "protocol", "bytecode"},
    "process": {"base", "protocol", "bytecode", "arch"},
    # the library loaded into programs: its ABI, the interpreter, the frame format and clock
    "inproc": {"bytecode", "trace/frame_format.hpp", "trace/static_data.hpp", "arch/frame_clock.hpp",
               "arch/inproc_trap.hpp", "arch/sdt_argument.hpp"},
    "experiment": {"base", "protocol", "bytecode", "arch", "trace", "process", "inproc"},
    "server": {"base", "protocol", "bytecode", "arch", "trace", "process", "experiment"},
    "tools": {"base", "protocol", "bytecode", "trace"},
}
# Subfolders private to their folder: a header in one is included from outside the folder only
# where listed (an implementation reachable only through the folder's interface).
PRIVATE = {
    # the ISA backends: the rest of tpagent sees them through arch/arch.hpp
    "arch/x86_64": set(),
    "arch/aarch64": set(),
    # the Linux process: the server makes one (and starts the watchdog), the experiment
    # publishes its buffer to the watchdog; everything else goes through process/target.hpp
    "process/linux": {
        "server/main.cpp: process/linux/code_guard.hpp",
        "server/server.cpp: process/linux/linux_process.hpp",
        "server/server.cpp: process/linux/svr4_libraries.hpp",
        "server/server.hpp: process/linux/child_events.hpp",
        "server/handlers_xfer.cpp: process/linux/svr4_libraries.hpp",
        "experiment/shared_buffer.cpp: process/linux/code_guard.hpp",
    },
}
INCLUDE = re.compile(r'^#include "(([a-z_0-9]+)/[^"]*)"', re.M)

root = Path(__file__).resolve().parent.parent
bad = []
for layer, allowed in ALLOWED.items():
    for path in sorted((root / layer).rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".h", ".c"):
            continue
        for match in INCLUDE.finditer(path.read_text()):
            header, used = match.group(1), match.group(2)
            if used != layer and used not in allowed and header not in allowed:
                line = path.read_text().count("\n", 0, match.start()) + 1
                bad.append(f"{path.relative_to(root)}:{line}: {layer}/ may not include {used}/")
for layer in ALLOWED:
    for path in sorted((root / layer).rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".h", ".c"):
            continue
        rel = str(path.relative_to(root))
        for match in INCLUDE.finditer(path.read_text()):
            header = match.group(1)
            for sub, allowed in PRIVATE.items():
                owner = sub.split("/")[0]
                if header.startswith(sub + "/") and not rel.startswith(owner + "/") \
                        and f"{rel}: {header}" not in allowed:
                    line = path.read_text().count("\n", 0, match.start()) + 1
                    bad.append(f"{rel}:{line}: {sub}/ is private to {owner}/ ({header})")
# A single header allowed across layers must not bring in the rest of its folder.
for layer, allowed in ALLOWED.items():
    for header in sorted(h for h in allowed if "/" in h):
        for match in INCLUDE.finditer((root / header).read_text()):
            bad.append(f"{header}: included by {layer}/, so it may not include {match.group(1)}")
print("\n".join(bad) if bad else "layers: every include goes downwards")
sys.exit(1 if bad else 0)
