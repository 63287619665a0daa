#!/usr/bin/env bash
# Builds the `fuzz` preset's fuzz_* targets and runs each for SECONDS seconds.
# Fails as soon as a target crashes (the reproducer is left in build/fuzz/artifacts/).
# Usage: scripts/fuzz.sh SECONDS
set -euo pipefail
seconds=${1:?usage: scripts/fuzz.sh SECONDS-PER-TARGET}
top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/build/fuzz"
names=()
for src in "$top"/fuzz/fuzz_*.cpp; do
  [ -e "$src" ] && names+=("$(basename "$src" .cpp)")
done
if ((${#names[@]} == 0)); then
  echo "fuzz.sh: no fuzz/fuzz_*.cpp targets" >&2
  exit 1
fi
cmake --preset fuzz -S "$top" >/dev/null
# Each target on its own, so one that does not build does not stop the others from running.
built=() broken=()
for name in "${names[@]}"; do
  if cmake --build "$build" --target "$name" >"$build/build-$name.log" 2>&1; then
    built+=("$name")
  else
    broken+=("$name")
    echo "fuzz.sh: $name does not build (log: $build/build-$name.log)" >&2
  fi
done
mkdir -p "$build/artifacts" "$build/corpus"
for name in "${built[@]}"; do
  bin=$(find "$build" -type f -name "$name" -perm -u+x | head -n 1)
  corpus="$build/corpus/$name"
  log="$build/artifacts/$name.log"
  mkdir -p "$corpus"
  echo "== $name: ${seconds}s"
  if ! "$bin" -max_total_time="$seconds" -artifact_prefix="$build/artifacts/$name-" \
    -print_final_stats=1 "$corpus" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "fuzz.sh: $name failed; log $log, reproducer in $build/artifacts/" >&2
    exit 1
  fi
  grep -E "^(Done|stat::number_of_executed_units)" "$log" || true
done
echo "fuzz.sh: ${#built[@]} target(s) ran ${seconds}s each without a crash"
# The arm64 compiler backend: the same differential target, built by the arm64 preset without
# libFuzzer (tests/board_unit/fuzz_driver.cpp), run under qemu user mode on the corpus above
# and then on random inputs for as long.
arm64_fuzz="$top/build/arm64/tests/fuzz_ax_differential"
if [ -x "$arm64_fuzz" ] && command -v qemu-aarch64-static >/dev/null; then
  echo "== fuzz_ax_differential on arm64 (qemu user mode): ${seconds}s"
  if ! (cd "$build/artifacts" && qemu-aarch64-static "$arm64_fuzz" --seconds "$seconds" \
    "$build/corpus/fuzz_ax_differential"); then
    echo "fuzz.sh: the arm64 backend differs from the interpreter; input in $build/artifacts/crash-input.bin" >&2
    exit 1
  fi
else
  echo "fuzz.sh: arm64 backend not fuzzed: no $arm64_fuzz (cmake --build --preset arm64) or no qemu-aarch64-static" >&2
fi
if ((${#broken[@]})); then
  echo "fuzz.sh: not built: ${broken[*]}" >&2
  exit 1
fi
