#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite. Usage: scripts/test.sh [PRESET]  (default|asan|tsan)
# tsan builds and runs only the lock-free core's tests (ctest label tsan), under ThreadSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
scripts/setup.sh
# TPAGENT_UNITY=ON|OFF overrides the preset's unity build setting (CI turns it on for default).
unity=()
[ -n "${TPAGENT_UNITY:-}" ] && unity=(-DTPAGENT_UNITY="$TPAGENT_UNITY")
cmake --preset "$preset" "${unity[@]}" >/dev/null
cmake --build --preset "$preset"
# The arm64 tests (ctest label arm64, default preset only) run the board build on an emulated
# arm64 board.
if [ "$preset" = default ]; then
  cmake --preset arm64 >/dev/null
  cmake --build --preset arm64
fi
# On a failure, the failing tests' own verdicts again, last: a CI log's tail is often all
# that is read (ctest prints its summary after every test's output).
if ! ctest --preset "$preset"; then
  echo "== what the failing tests said =="
  log=("build/$preset/Testing/Temporary/LastTest"*.log)
  grep -hE "^(FAILED|ERROR) |Timeout" "${log[@]}" | tail -n 30 || true
  grep -hE "^E   " "${log[@]}" | head -n 40 || true
  exit 1
fi
