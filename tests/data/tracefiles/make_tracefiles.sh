#!/usr/bin/env bash
# Regenerates the trace files in this folder: gdb traces traced.c through gdbserver and
# writes each run with `tsave`. Needs gcc, gdb and gdbserver (the committed files come from
# gdb/gdbserver 13.1 on x86-64 Linux).
#   basic.tf     one tracepoint: $regs, arguments, *pointer, globals, an array slice,
#                $trace_timestamp and a trace state variable bumped by teval; 5 frames
#   stepping.tf  a conditional tracepoint with while-stepping, a pass count that stops the
#                trace, a disabled tracepoint and one without actions
#   empty.tf     tracepoint defined, trace started and stopped before any hit; no frames
# Usage: make_tracefiles.sh [OUTPUT_DIR]   (default: this folder)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$here}" && cd "${1:-$here}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp "$here/traced.c" "$work/"
(cd "$work" && gcc -O0 -g -o traced traced.c)

# Common start: stop in main once libc is loaded (gdbserver refuses QTStart before that).
prologue() {
    cat <<GDB
set confirm off
set pagination off
set sysroot /
file $work/traced
target remote | gdbserver --once - $work/traced
break main
continue
break finish
GDB
}

run_gdb() { # name, script on stdin
    local name=$1
    { prologue; cat; echo "tsave $work/$name.tf"; echo "kill"; } >"$work/$name.gdb"
    timeout 120 gdb -batch -nx -x "$work/$name.gdb" >"$work/$name.log" 2>&1 || {
        cat "$work/$name.log" >&2
        exit 1
    }
    cp "$work/$name.tf" "$out/$name.tf"
    echo "wrote $out/$name.tf ($(stat -c %s "$out/$name.tf") bytes)"
}

run_gdb basic <<'GDB'
tvariable $calls = 0
trace work
actions
collect $regs, step, *slot, glob, counters[1]@3, $trace_timestamp
teval $calls = $calls + 1
collect $calls
end
tstart
continue
tstop
GDB

run_gdb stepping <<'GDB'
tvariable $even = 0
trace work if step % 2 == 0
actions
collect step, origin
teval $even = $even + 1
while-stepping 2
collect $rip, glob
end
end
trace finish
disable 4
trace traced.c:19
passcount 4 5
tstart
continue
tstatus
GDB

run_gdb empty <<'GDB'
trace work
actions
collect $regs
end
tstart
tstop
GDB
