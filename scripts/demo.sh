#!/usr/bin/env bash
# Sets up, builds, and runs tpagent serving examples/demo while gdb drives a short session.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default --target tpagent
exec python3 scripts/demo.py build/default
