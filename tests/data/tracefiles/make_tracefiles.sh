#!/usr/bin/env bash
# Regenerates the trace files in this folder: gdb traces traced.c (or threads.c) through
# gdbserver or tpagent and writes each run with `tsave` (tpagent's own writer: `tsave -r`).
# Needs gcc, gdb and gdbserver (the committed files come from gdb/gdbserver 13.1 on x86-64
# Linux), gdbserver's in-process agent for fast.tf and a tpagent build for threads.tf.
#   basic.tf     one tracepoint: $regs, arguments, *pointer, globals, an array slice,
#                $trace_timestamp and a trace state variable bumped by teval; 5 frames
#   stepping.tf  a conditional tracepoint with while-stepping, a pass count that stops the
#                trace, a disabled tracepoint and one without actions
#   empty.tf     tracepoint defined, trace started and stopped before any hit; no frames
#   fast.tf      a fast tracepoint (gdbserver's in-process agent) in basic.tf's function;
#                gdb writes its `tp T` line with `F0`; 5 frames
#   threads.tf   tpagent, written by tpagent (`tsave -r`): two threads hit one tracepoint
#                three times each; $regs (fs_base tells the threads apart), $trace_timestamp
#                (microseconds since the epoch) and $trace_timestamp_ns (monotonic ns)
# Usage: make_tracefiles.sh [OUTPUT_DIR [NAME...]]   (default: this folder, every file)
# Environment: TPAGENT (default: build/default/bin/tpagent of this tree), INPROCTRACE
# (default: /usr/lib/libinproctrace.so).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$here}" && cd "${1:-$here}" && pwd)
shift $(($# > 0 ? 1 : 0))
wanted=("$@")
tpagent=${TPAGENT:-$here/../../../build/default/bin/tpagent}
inproctrace=${INPROCTRACE:-/usr/lib/libinproctrace.so}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cp "$here/traced.c" "$here/threads.c" "$work/"
(cd "$work" && gcc -O0 -g -o traced traced.c)
# gdbserver's fast tracepoint jump pad pushes registers below the stack pointer: without a
# red zone the traced function keeps its locals out of the way. Non-PIE, as the in-process
# agent's jump pads must be within a 32-bit jump of the code.
(cd "$work" && gcc -O0 -g -no-pie -mno-red-zone -o traced-fast traced.c)
(cd "$work" && gcc -O0 -g -pthread -o threads threads.c)

# Common start: stop in main once libc is loaded (gdbserver refuses QTStart before that).
prologue() { # program, server command line
    cat <<GDB
set confirm off
set pagination off
set sysroot /
file $work/$1
target remote | $2
break main
continue
GDB
}

wanted() {
    [[ ${#wanted[@]} -eq 0 ]] && return 0
    local w
    for w in "${wanted[@]}"; do [[ $w == "$1" ]] && return 0; done
    return 1
}

# name, program, server command line, save command; the script on stdin.
run_gdb() {
    local name=$1 program=$2 server=$3 save=${4:-tsave}
    wanted "$name" || { cat >/dev/null; return 0; }
    { prologue "$program" "$server"; cat; echo "$save $work/$name.tf"; echo "kill"; } \
        >"$work/$name.gdb"
    timeout 120 gdb -batch -nx -x "$work/$name.gdb" >"$work/$name.log" 2>&1 || {
        cat "$work/$name.log" >&2
        exit 1
    }
    cp "$work/$name.tf" "$out/$name.tf"
    echo "wrote $out/$name.tf ($(stat -c %s "$out/$name.tf") bytes)"
}

gdbserver="gdbserver --once - $work/traced"

run_gdb basic traced "$gdbserver" <<'GDB'
break finish
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

run_gdb stepping traced "$gdbserver" <<'GDB'
break finish
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

run_gdb empty traced "$gdbserver" <<'GDB'
break finish
trace work
actions
collect $regs
end
tstart
tstop
GDB

# traced.c:16 (glob += step) starts with a 6-byte instruction: room for the 5-byte jump.
run_gdb fast traced-fast \
    "gdbserver --once --wrapper env LD_PRELOAD=$inproctrace -- - $work/traced-fast" <<'GDB'
break finish
ftrace traced.c:16
actions
collect $regs, step, *slot, glob, $trace_timestamp
end
tstart
continue
tstop
GDB

run_gdb threads threads "$tpagent --once - $work/threads" "tsave -r" <<'GDB'
tvariable $trace_timestamp_ns
trace tick
actions
collect $regs, thread, n, $trace_timestamp, $trace_timestamp_ns
end
tstart
break threads.c:25
continue
tstop
GDB
