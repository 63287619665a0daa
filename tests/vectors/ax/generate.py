#!/usr/bin/env python3
"""Regenerates the agent-expression test vectors from the real gdb.

Builds prog.c, runs it under gdbserver, stops at the probe line and, for every expression
below, makes gdb (1) compile it as a tracepoint condition or collect/teval action, whose
bytecode is captured from the QTDP packets on the wire (`set debug remote 1`), (2) print
its own disassembly (`maint agent-eval` / `maint agent`), and (3) print the expression's
value. It also dumps the registers, prog.c's data section, the stack around the probe
frame and the trace state variables. Output: vectors.txt and image.txt next to this file.

Usage: tests/vectors/ax/generate.py   (needs gcc, gdb, gdbserver)
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# (kind, expression). kind: cond = tracepoint condition (agent-eval form),
# collect = collect action (trace form), teval = teval action (agent-eval form, side effects).
EXPRESSIONS = [("cond", e) for e in [
    # integers of every width and signedness
    "x", "neg", "ux", "lg", "ulg", "sh", "ush", "sc", "uc", "big", "zero",
    "x % 2 == 0", "x % 2", "neg % 5", "neg / 5", "ux / 3", "ux % 7", "ulg % 10", "lg / -7",
    "lg % -7", "x + neg", "x - neg", "x * neg - big", "ux + 100", "sc + uc", "lg * 2",
    "big & 0xffff", "x << 3", "1 << x", "neg >> 3", "ux >> 4", "ulg >> 60", "(x & 3) | 8",
    "x ^ neg", "-x", "~x", "!x", "!zero", "-ux",
    # casts
    "(char)x", "(unsigned char)neg", "(short)ux", "(long)ux", "(unsigned)neg",
    "(unsigned long)sc", "(long)(unsigned char)sc", "(int)big",
    # comparisons and logic
    "x == 7", "x != 7", "x < neg", "ux > 5", "x <= 7", "x >= 8", "neg < 0", "ux < 0",
    "sc < uc", "x > 3 && ux < 2 || sh", "x ? 4 : lg", "zero ? 1 : 2", "x && zero", "zero || x",
    # arrays, structs, bitfields, pointers
    "arr[2]", "arr[x - 6]", "sarr[2]", "text[1]", "r1.i", "r1.u", "r1.c", "r1.uc", "r1.sh",
    "r1.ush", "r1.l", "r1.ul", "r1.ll", "r1.bf_u3", "r1.bf_s5", "r1.bf_u12", "r1.bf_s1",
    "r0.bf_u3", "r0.bf_s5", "r0.bf_u12", "r0.bf_s1", "r1.in.s", "r1.in.bytes[2]",
    "r0.bf_u3 == 7 && r1.bf_s1 == -1", "pr->i", "pr->next->c", "pr->next->in.bytes[1]",
    "pr->next->bf_s5 + pr->bf_u12", "head->next->next->next->next->value", "*pint",
    "**ppint", "pint[1]", "pint[-1]", "pr->next->name[1]", "sizeof(r1) + x", "&arr[3]",
    # registers
    "$rax", "$rsp", "$eflags", "$rip + 1", "$rbx == $rdx", "$rdi & 0xff",
    # locals and arguments of probe()
    "a", "b", "c", "local", "sum", "larr[2]", "a + b * c", "local % 4 == 1",
    # trace state variables
    "$tv1", "$tv1 + x", "$tv2 * 2", "$tv2 < 0",
]] + [("collect", e) for e in [
    "pr->next->c", "head->next->next->value", "pr->next->in", "arr[x - 6]", "$tv1",
    "*pint", "pr->next->name[0]", "sarr[x - 5]",
]] + [("teval", e) for e in [
    "$tv2 = $tv2 + x", "$tv1 = $tv1 * 3", "$tv1 = a + 1",
]]

TSVS = [("tv1", 5), ("tv2", -3)]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def main():
    src = os.path.join(HERE, "prog.c")
    line = next(i + 1 for i, l in enumerate(open(src)) if "probe-line" in l)
    with tempfile.TemporaryDirectory() as tmp:
        prog = os.path.join(tmp, "prog")
        run(["gcc", "-g", "-O0", "-static", "-o", prog, src])
        sections = run(["objdump", "-h", prog]).stdout
        m = re.search(r"axdata\s+([0-9a-f]+)\s+([0-9a-f]+)", sections)
        data_size, data_addr = int(m.group(1), 16), int(m.group(2), 16)

        # gdb runs a Python driver so that one expression gdb cannot compile does not end
        # the whole session (a command-file error would).
        steps = ["set pagination off", "set confirm off", "set width 0",
                 f"target remote | gdbserver - {prog}", f"break prog.c:{line}", "continue"]
        steps += [f"tvariable ${name} = {value}" for name, value in TSVS]
        for i, (kind, expr) in enumerate(EXPRESSIONS):
            steps.append(f"trace prog.c:{line}")
            if kind == "cond":
                steps.append(f"condition $bpnum {expr}")
            else:
                action = os.path.join(tmp, f"action{i}.gdb")
                with open(action, "w") as f:
                    f.write(f"actions $bpnum\n{'collect' if kind == 'collect' else 'teval'} {expr}\nend\n")
                steps.append(f"source {action}")
            steps.append(("mark", f"===TP {i}:"))
            steps.append("output $bpnum")
            steps.append(("mark", ""))
        for i, (kind, expr) in enumerate(EXPRESSIONS):
            steps.append(("mark", f"===MAINT {i}"))
            steps.append(f"{'maint agent' if kind == 'collect' else 'maint agent-eval'} {expr}")
            steps.append(("mark", "===END"))
            if kind == "cond":
                # Trace state variables have no value in gdb until a trace runs: use theirs.
                value_expr = expr
                for name, value in TSVS:
                    value_expr = value_expr.replace(f"${name}", f"((long long){value})")
                steps += [("mark", f"===VALUE {i}:"), f"output/x (unsigned long long)({value_expr})",
                          ("mark", ":"), f"output sizeof({value_expr})", ("mark", "")]
        steps += [("mark", "===REGS"), "maint print raw-registers", ("mark", "===ENDREGS"),
                  f"dump binary memory {tmp}/data.bin {data_addr} {data_addr + data_size}",
                  f"dump binary memory {tmp}/stack.bin $sp-512 $sp+512",
                  ("mark", "===SP:"), "output/x $sp-512", ("mark", ""),
                  "set debug remote 1", "tstart", "set debug remote 0", "tstop", "kill"]
        driver = os.path.join(tmp, "driver.py")
        with open(driver, "w") as f:
            f.write("import gdb, sys\n")
            f.write("def step(c):\n    try:\n        gdb.execute(c)\n"
                    "    except gdb.error as e:\n        print('===ERR', c, e)\n")
            f.write("def mark(t):\n    gdb.flush()\n    sys.stdout.write(t + '\\n' if not t.endswith(':') else t)\n    sys.stdout.flush()\n")
            for st in steps:
                if isinstance(st, tuple):
                    f.write(f"mark({st[1]!r})\n")
                else:
                    f.write(f"step({st!r})\n")
        out = subprocess.run(["gdb", "-batch", "-nx", "-x", driver, prog], capture_output=True,
                             text=True, timeout=300)
        log = out.stdout + out.stderr
        if os.environ.get("AX_DEBUG"):
            print(log, file=sys.stderr)
        data = open(os.path.join(tmp, "data.bin"), "rb").read()
        stack = open(os.path.join(tmp, "stack.bin"), "rb").read()

    tp_of = {int(i): int(n) for i, n in re.findall(r"===TP (\d+):(\d+)", log)}
    # Bytecode per tracepoint from the wire: conditions in the first QTDP, actions after.
    cond_bytes, action_bytes = {}, {}
    for pkt in re.findall(r"Sending packet: \$(QTDP:[^#]*)#", log):
        if pkt.startswith("QTDP:-"):
            num = int(pkt.split(":")[1][1:], 16)
            for hexes in re.findall(r"X[0-9A-Fa-f]+,([0-9a-fA-F]+)", pkt):
                action_bytes.setdefault(num, []).append(hexes.lower())
        else:
            num = int(pkt.split(":")[1], 16)
            m = re.search(r":X[0-9a-fA-F]+,([0-9a-fA-F]+)", pkt)
            if m:
                cond_bytes[num] = m.group(1).lower()
    tsv_nums = {}
    for num, init, name in re.findall(r"Sending packet: \$QTDV:([0-9a-f]+):([0-9a-f]+):\d:([0-9a-f]+)#", log):
        value = int(init, 16)
        if value >= 1 << 63:
            value -= 1 << 64
        tsv_nums[bytes.fromhex(name).decode()] = (int(num, 16), value)

    maint = {int(i): body for i, body in re.findall(r"===MAINT (\d+)\n(.*?)===END", log, re.S)}
    values = {int(i): (v, s) for i, v, s in re.findall(r"===VALUE (\d+):(0x[0-9a-f]+):(\d+)", log)}

    records, skipped = [], []
    for i, (kind, expr) in enumerate(EXPRESSIONS):
        tp = tp_of.get(i)
        hexes = cond_bytes.get(tp) if kind == "cond" else "".join((action_bytes.get(tp) or [])[:1]) or None
        lines = [l for l in maint.get(i, "").splitlines() if re.match(r"\s*\d+\s+\S", l)]
        if not hexes or not lines:
            skipped.append(expr)
            continue
        rec = [f"# {expr}", f"kind {kind}", f"bytes {hexes}"]
        if i in values:
            rec += [f"size {values[i][1]}", f"expect {values[i][0]}"]
        rec += [f"gdb {l}" for l in lines]
        records.append("\n".join(rec))

    with open(os.path.join(HERE, "vectors.txt"), "w") as f:
        f.write("# Generated by generate.py from gdb's output; do not edit.\n"
                "# Per vector: the expression, kind (cond/collect/teval), the bytecode gdb sent,\n"
                "# sizeof and value ((unsigned long long)(expr)) as gdb printed them (cond only),\n"
                "# and gdb's own disassembly.\n\n")
        f.write("\n\n".join(records) + "\n")

    regs = re.search(r"===REGS\n(.*?)===ENDREGS", log, re.S).group(1)
    sp_low = int(re.search(r"===SP:(0x[0-9a-f]+)", log).group(1), 16)
    with open(os.path.join(HERE, "image.txt"), "w") as f:
        f.write("# Generated by generate.py: registers, memory and trace state variables at the\n"
                "# probe line of prog.c. reg <gdb regnum> <value>; mem <addr> <bytes>; tsv <num> <value>\n")
        for m in re.finditer(r"^\s*\S+\s+(\d+)\s+\d+\s+\d+\s+(\d+)\s+\S+\s+0x([0-9a-f]+)\s*$", regs, re.M):
            if int(m.group(2)) <= 8:
                f.write(f"reg {m.group(1)} 0x{int(m.group(3), 16):x}\n")
        for base, blob in ((data_addr, data), (sp_low, stack)):
            for off in range(0, len(blob), 32):
                f.write(f"mem 0x{base + off:x} {blob[off:off + 32].hex()}\n")
        for name, (num, value) in sorted(tsv_nums.items()):
            if name in dict(TSVS):
                f.write(f"tsv {num} {value}\n")
    print(f"{len(records)} vectors, skipped: {skipped}", file=sys.stderr)


if __name__ == "__main__":
    main()
