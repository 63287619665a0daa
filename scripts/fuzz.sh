#!/usr/bin/env bash
# Builds the `fuzz` preset's fuzz_* targets and runs each for SECONDS seconds, or, with `long`,
# for RUNS executions each (default 10^7). Each starts from its working corpus in
# build/fuzz/corpus/ and the checked-in seeds in fuzz/corpus/ (fuzz/make_seeds.py).
# Fails as soon as a target crashes (the reproducer is left in build/fuzz/artifacts/).
# The figures (target, executions, seconds, result) go to build/fuzz/figures.tsv (a short
# run's to figures-short.tsv), which
# scripts/reliability.py puts in the README: a target's row replaces its row of an earlier run,
# so targets can be run apart, or two at once in two shells (FUZZ_TARGETS).
# Usage: scripts/fuzz.sh SECONDS | [FUZZ_MAX_SECONDS=S] scripts/fuzz.sh long [RUNS]
#   FUZZ_TARGETS="fuzz_a fuzz_b arm64": only these targets (arm64: the backend under qemu).
set -euo pipefail
usage="usage: scripts/fuzz.sh SECONDS-PER-TARGET | scripts/fuzz.sh long [RUNS-PER-TARGET]"
if [ "${1:-}" = long ]; then
  runs=${2:-10000000}
  # Entropic scheduling off: with a corpus of thousands of inputs, libFuzzer 14 spent up to 62%
  # of a long run updating its feature frequencies (perf) instead of executing inputs.
  limit=(-runs="$runs" -entropic=0)
  # FUZZ_MAX_SECONDS: stop a target there even if it has not made RUNS executions yet.
  [ -n "${FUZZ_MAX_SECONDS:-}" ] && limit+=(-max_total_time="$FUZZ_MAX_SECONDS")
  seconds=${FUZZ_ARM64_SECONDS:-600} # the arm64 backend's random run, which counts no executions
else
  seconds=${1:?$usage}
  short=1
  limit=(-max_total_time="$seconds")
fi
top=$(cd "$(dirname "$0")/.." && pwd)
build="$top/build/fuzz"
names=()
wanted() { [ -z "${FUZZ_TARGETS:-}" ] || [[ " $FUZZ_TARGETS " == *" $1 "* ]]; }
for src in "$top"/fuzz/fuzz_*.cpp; do
  [ -e "$src" ] && wanted "$(basename "$src" .cpp)" && names+=("$(basename "$src" .cpp)")
done
if ((${#names[@]} == 0)) && ! wanted arm64; then
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
# Short runs keep their figures apart, so that they never replace a long run's.
figures="$build/figures${short:+-short}.tsv"
# record TARGET EXECUTIONS SECONDS RESULT: replaces TARGET's row, dated (under a lock, for two
# shells).
record() {
  (
    flock 9
    if [ -s "$figures" ]; then
      awk -F'\t' -v t="$1" 'NR == 1 || $1 != t' "$figures" >"$figures.new"
    else
      printf 'target\texecutions\tseconds\tresult\tdate\n' >"$figures.new"
    fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$@" "$(date +%F)" >>"$figures.new"
    mv "$figures.new" "$figures"
  ) 9>"$figures.lock"
}
for name in "${built[@]}"; do
  bin=$(find "$build" -type f -name "$name" -perm -u+x | head -n 1)
  corpus="$build/corpus/$name"
  log="$build/artifacts/$name.log"
  seeds=()
  [ -d "$top/fuzz/corpus/$name" ] && seeds=("$top/fuzz/corpus/$name")
  mkdir -p "$corpus"
  extra=()
  # tpdump's printers on short files (a few frames each): at the seeds' 17 KB target
  # description, parsing took most of an execution (850 a second). Whole descriptions and
  # long files go through fuzz_tracefile_reader.
  [ "$name" = fuzz_tpdump ] && extra=(-max_len=8192)
  echo "== $name: ${limit[*]} ${extra[*]}"
  start=$SECONDS
  status=0
  "$bin" "${limit[@]}" "${extra[@]}" -artifact_prefix="$build/artifacts/$name-" \
    -print_final_stats=1 "$corpus" "${seeds[@]}" >"$log" 2>&1 || status=$?
  executions=$(sed -n 's/^stat::number_of_executed_units: //p' "$log")
  # 72: libFuzzer's exit status when interrupted (^C, kill -INT): a long run stopped early.
  if ((status == 72)) && [ -n "$executions" ]; then
    record "$name" "$executions" $((SECONDS - start)) "no crash (stopped early)"
    echo "fuzz.sh: $name stopped after $executions executions, no crash" >&2
    exit 1
  elif ((status != 0)); then
    tail -n 40 "$log" >&2
    record "$name" "" $((SECONDS - start)) crash
    echo "fuzz.sh: $name failed; log $log, reproducer in $build/artifacts/" >&2
    exit 1
  fi
  record "$name" "$executions" $((SECONDS - start)) "no crash"
  echo "$executions executions in $((SECONDS - start)) s"
done
echo "fuzz.sh: ${#built[@]} target(s) ran (${limit[*]}) without a crash; figures in $figures"
# The arm64 compiler backend: the same differential target, built by the arm64 preset without
# libFuzzer (tests/board_unit/fuzz_driver.cpp), run under qemu user mode on the corpus above
# and then on random inputs for as long.
arm64_fuzz="$top/build/arm64/tests/fuzz_ax_differential"
if ! wanted arm64; then
  :
elif [ -x "$arm64_fuzz" ] && command -v qemu-aarch64-static >/dev/null; then
  echo "== fuzz_ax_differential on arm64 (qemu user mode): ${seconds}s"
  start=$SECONDS
  if ! (cd "$build/artifacts" && qemu-aarch64-static "$arm64_fuzz" --seconds "$seconds" \
    "$build/corpus/fuzz_ax_differential" | tee "$build/artifacts/arm64.log"); then
    echo "fuzz.sh: the arm64 backend differs from the interpreter; input in $build/artifacts/crash-input.bin" >&2
    exit 1
  fi
  inputs=$(sed -n 's/^fuzz driver: \([0-9]*\) corpus inputs, \([0-9]*\) random inputs.*/\1 + \2/p' \
    "$build/artifacts/arm64.log")
  record "fuzz_ax_differential, arm64 backend (qemu)" $((inputs)) $((SECONDS - start)) "no mismatch"
else
  echo "fuzz.sh: arm64 backend not fuzzed: no $arm64_fuzz (cmake --build --preset arm64) or no qemu-aarch64-static" >&2
fi
if ((${#broken[@]})); then
  echo "fuzz.sh: not built: ${broken[*]}" >&2
  exit 1
fi
