#!/usr/bin/env bash
# Sets up, builds, and shows a tracing session: gdb traces examples/demo.c through tpagent (with
# the in-process agent), then tpdump prints the trace file and writes its HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset default >/dev/null
# tpagent brings libtpagent-inproc.so with it.
cmake --build --preset default --target tpagent tpdump
exec python3 scripts/demo.py build/default
