#!/usr/bin/env python3
"""Fails (exit 1, saying why) unless the in-process agent's image is what tpagent can map by
itself (process/linux/agent_image.cpp): a 64-bit little-endian ET_DYN with no interpreter, no
needed library, no TLS, no constructors, no undefined symbols, and only RELATIVE relocations.
On AArch64 its code must not touch x28 either: a Go program keeps its goroutine there, and
Go's signal handler reads it at whatever instruction the signal interrupts (the collector's
included, in a pad on an agent stack). Checked with the cross objdump where there is one.

Usage: check_inproc_image.py IMAGE
"""

import re
import shutil
import struct
import subprocess
import sys

PT_INTERP, PT_TLS, PT_DYNAMIC = 3, 7, 2
DT_NULL, DT_NEEDED, DT_RELA, DT_RELASZ, DT_REL, DT_RELR = 0, 1, 7, 8, 17, 36
DT_INIT, DT_FINI, DT_JMPREL, DT_PLTRELSZ = 12, 13, 23, 2
DT_INIT_ARRAY, DT_INIT_ARRAYSZ, DT_PREINIT_ARRAY = 25, 27, 32
RELATIVE = {62: 8, 183: 1027}  # e_machine -> R_*_RELATIVE
SHT_DYNSYM = 11


def main() -> int:
    data = open(sys.argv[1], "rb").read()
    problems = []
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        print(f"{sys.argv[1]}: not a 64-bit little-endian ELF file")
        return 1
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    e_phoff, e_shoff = struct.unpack_from("<QQ", data, 32)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from("<HHHH", data, 54)
    if e_type != 3:
        problems.append("not ET_DYN")
    dynamic = None
    for i in range(e_phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, e_phoff + i * e_phentsize)
        if p_type == PT_INTERP:
            problems.append("it has an interpreter")
        elif p_type == PT_TLS:
            problems.append("it has TLS (PT_TLS)")
        elif p_type == PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
    tags = {}
    if dynamic:
        for at in range(dynamic[0], dynamic[0] + dynamic[1], 16):
            tag, value = struct.unpack_from("<qQ", data, at)
            if tag == DT_NULL:
                break
            tags.setdefault(tag, []).append(value)
    for tag, what in ((DT_NEEDED, "a needed library"), (DT_REL, "REL relocations"),
                      (DT_RELR, "RELR relocations"), (DT_JMPREL, "PLT relocations"),
                      (DT_INIT, "DT_INIT"), (DT_FINI, "DT_FINI"),
                      (DT_PREINIT_ARRAY, "pre-initialisers")):
        if tag in tags and (tag != DT_JMPREL or tags.get(DT_PLTRELSZ, [0])[0]):
            problems.append(f"it has {what}")
    if tags.get(DT_INIT_ARRAYSZ, [0])[0]:
        problems.append("it has constructors (DT_INIT_ARRAY)")
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize) for i in range(e_shnum)]
    # Relocations: every SHT_RELA section's entries (the dynamic table's DT_RELA is one of them).
    relative = RELATIVE.get(e_machine)
    for s in sections:
        if s[1] == 4:  # SHT_RELA
            for at in range(s[4], s[4] + s[5], 24):
                _, info, _ = struct.unpack_from("<QQq", data, at)
                if info & 0xffffffff != relative:
                    problems.append(f"a relocation of type {info & 0xffffffff} (only RELATIVE)")
                    break
        if s[1] == SHT_DYNSYM:
            for at in range(s[4] + 24, s[4] + s[5], 24):  # entry 0 is the null symbol
                _, info, _, shndx = struct.unpack_from("<IBBH", data, at)
                if shndx == 0:
                    problems.append("an undefined dynamic symbol")
                    break
    objdump = shutil.which("aarch64-linux-gnu-objdump")
    if e_machine == 183 and objdump:
        code = subprocess.run([objdump, "-d", sys.argv[1]], capture_output=True, text=True, check=True).stdout
        touching = [line.strip() for line in code.splitlines() if re.search(r"\b[xw]28\b", line)]
        if touching:
            problems.append(f"its code uses x28 ({len(touching)} instructions, e.g. {touching[0]})")
    for p in problems:
        print(f"{sys.argv[1]}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
