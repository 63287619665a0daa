#!/usr/bin/env bash
# Runs GDB's own DejaGnu testsuite (gdb.trace/*.exp by default) against tpagent and against GNU
# gdbserver on the gdbserver boards, then compares the two: counts per .exp file, totals, and
# the regressions -- tests that PASS with gdbserver but not with tpagent.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"

usage() {
  cat <<EOF
Usage: scripts/gdb-testsuite.sh [OPTIONS]

Runs gdb's testsuite (from the gdb-source package, for the installed gdb) with the installed
gdb against tpagent and GNU gdbserver, and compares the results.

Options:
  --board NAME        DejaGnu board: native-gdbserver or native-extended-gdbserver; repeatable
                      (default: both)
  --stub WHICH        tpagent, gdbserver or both (default: both)
  --tests GLOB        .exp files, relative to gdb/testsuite (default: gdb.trace/*.exp); repeatable
  --tpagent PATH      tpagent to test (default: build/default/bin/tpagent)
  --tpagent-ipa PATH  in-process agent programs link as libinproctrace.so for tpagent
                      (default: libinproctrace.so next to tpagent)
  --gdbserver PATH    GNU gdbserver (default: /usr/bin/gdbserver)
  --gdbserver-ipa PATH
                      gdbserver's libinproctrace.so (default: the gdbserver package's)
  --cache DIR         where the gdb sources are unpacked (default: build/gdbsuite, or
                      \$TPAGENT_GDBSUITE_CACHE)
  --results DIR       where each run keeps its build, gdb.sum and gdb.log, in <stub>-<board>/
                      (default: <cache>/results)
  --gdbserver-where-needed
                      run gdbserver only on the .exp files where tpagent's results are not all
                      PASS (a FAIL, a timeout, UNRESOLVED, UNSUPPORTED, or no results): an .exp
                      tpagent passes cleanly has no regression, whatever gdbserver does (CI uses
                      it; the totals then count only those files for gdbserver)
  --compare-only      don't run anything: compare the results saved in the results folder
  -h, --help          this message

A test that passes with gdbserver but not with tpagent is run again against tpagent, and if it
keeps failing, against gdbserver in tpagent's folder: one that fails there too is racy, not a
regression (TPAGENT_GDBSUITE_RETRIES: how many times each, default 4).

Exit status: 0 when both stubs have results for every board and nothing that passes with
gdbserver fails with tpagent; 1 otherwise; 2 on a usage or setup error.
Needs the Debian packages gdb, gdb-source, dejagnu and gdbserver (scripts/setup.sh).
EOF
}

die() {
  echo "gdb-testsuite: $*" >&2
  exit 2
}

boards=()
stub=both
tests=()
tpagent="$repo/build/default/bin/tpagent"
tpagent_ipa=""
gdbserver=/usr/bin/gdbserver
gdbserver_ipa=""
cache="${TPAGENT_GDBSUITE_CACHE:-$repo/build/gdbsuite}"
results=""
compare_only=""
where_needed=""
while (($#)); do
  case "$1" in
    --board) boards+=("${2:?--board needs a name}"); shift 2 ;;
    --stub) stub="${2:?--stub needs tpagent, gdbserver or both}"; shift 2 ;;
    --tests) tests+=("${2:?--tests needs a glob}"); shift 2 ;;
    --tpagent) tpagent="${2:?}"; shift 2 ;;
    --tpagent-ipa) tpagent_ipa="${2:?}"; shift 2 ;;
    --gdbserver) gdbserver="${2:?}"; shift 2 ;;
    --gdbserver-ipa) gdbserver_ipa="${2:?}"; shift 2 ;;
    --cache) cache="${2:?}"; shift 2 ;;
    --results) results="${2:?}"; shift 2 ;;
    --gdbserver-where-needed) where_needed=1; shift ;;
    --compare-only) compare_only=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
((${#boards[@]})) || boards=(native-gdbserver native-extended-gdbserver)
((${#tests[@]})) || tests=("gdb.trace/*.exp")
case "$stub" in
  both) stubs=(tpagent gdbserver) ;;
  tpagent | gdbserver) stubs=("$stub") ;;
  *) die "--stub is tpagent, gdbserver or both, not '$stub'" ;;
esac
for b in "${boards[@]}"; do
  case "$b" in
    native-gdbserver | native-extended-gdbserver) ;;
    *) die "unsupported board '$b' (native-gdbserver or native-extended-gdbserver)" ;;
  esac
done
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
results="${results:-$cache/results}"
mkdir -p "$results"
results="$(cd "$results" && pwd)"

# --- setup -------------------------------------------------------------------------------------

need_package() {  # need_package PACKAGE WHAT-FOR
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed" ||
    die "missing Debian package '$1' ($2): run scripts/setup.sh, or apt-get install $1"
}

# The testsuite must be the installed gdb's own: the same version from the same source package.
check_setup() {
  need_package gdb "the gdb the testsuite drives"
  need_package gdb-source "gdb's testsuite, in /usr/src/gdb.tar.*"
  need_package dejagnu "runtest"
  command -v runtest >/dev/null || die "runtest not found (Debian package dejagnu)"
  if ! command -v make >/dev/null || ! command -v cc >/dev/null; then
    die "make and cc are needed to build the test programs (Debian package build-essential)"
  fi
  local gdb_version src_version
  gdb_version="$(dpkg-query -W -f='${Version}' gdb)"
  src_version="$(dpkg-query -W -f='${Version}' gdb-source)"
  [ "$gdb_version" = "$src_version" ] ||
    echo "gdb-testsuite: warning: gdb $gdb_version but gdb-source $src_version" >&2
  tarball="$(compgen -G '/usr/src/gdb.tar.*' | head -n1 || true)"
  [ -n "$tarball" ] || die "no /usr/src/gdb.tar.* (Debian package gdb-source)"
}

# Unpacks the source tarball once; again only when the tarball changes (a new gdb-source).
unpack_sources() {
  local stamp="$cache/src/.unpacked" id
  id="$tarball $(stat -c '%s %Y' "$tarball")"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$id" ]; then
    echo "gdb-testsuite: unpacking $tarball into $cache/src"
    rm -rf "$cache/src"
    mkdir -p "$cache/src"
    tar -xf "$tarball" -C "$cache/src"
    echo "$id" >"$stamp"
  fi
  # The tarball holds the combined binutils-gdb tree under gdb/.
  testsuite_src="$cache/src/gdb/gdb/testsuite"
  [ -x "$testsuite_src/configure" ] || die "no gdb/testsuite/configure in $tarball"
}

stub_binary() { if [ "$1" = tpagent ]; then echo "$tpagent"; else echo "$gdbserver"; fi; }
stub_ipa() { if [ "$1" = tpagent ]; then echo "$tpagent_ipa"; else echo "$gdbserver_ipa"; fi; }

check_stubs() {
  local s
  for s in "${stubs[@]}"; do
    if [ "$s" = tpagent ]; then
      [ -x "$tpagent" ] || die "no tpagent at $tpagent: build it (cmake --build --preset default) or pass --tpagent"
      tpagent="$(cd "$(dirname "$tpagent")" && pwd)/$(basename "$tpagent")"
      tpagent_ipa="${tpagent_ipa:-$(dirname "$tpagent")/libinproctrace.so}"
      [ -f "$tpagent_ipa" ] ||
        die "no $tpagent_ipa: build the target tpagent-inproctrace (inproc/CMakeLists.txt) or pass --tpagent-ipa"
    else
      need_package gdbserver "GNU gdbserver and its libinproctrace.so"
      [ -x "$gdbserver" ] || die "no gdbserver at $gdbserver"
      gdbserver_ipa="${gdbserver_ipa:-$(dpkg -L gdbserver | grep '/libinproctrace\.so$' | head -n1 || true)}"
      [ -f "$gdbserver_ipa" ] || die "no libinproctrace.so in the gdbserver package; pass --gdbserver-ipa"
    fi
  done
}

# --- one run -----------------------------------------------------------------------------------

# gdb.sum -> ".exp <TAB> status <TAB> test name" per result line, the name without the suffixes
# that vary between runs ("(timeout)", "(eof)", ...) so names match across stubs; a "TIMEOUT"
# line for each timed-out test, and a "RAN" line per .exp (even one with no results). Two
# suffixes name an outcome a test also accepts, "X (too far)" (the stub could not place a fast
# tracepoint's jump) and "X (spurious collection)" (a tracepoint collected twice): they fold
# into X, so such a pass is compared with the other stub's X.
normalize_sum() {  # normalize_sum GDB.SUM
  awk '
    /^Running .*\.exp \.\.\.$/ {
      file = $2; sub(/.*\/testsuite\//, "", file); print file "\tRAN\t"; next
    }
    /^(PASS|FAIL|XPASS|XFAIL|KPASS|KFAIL|UNRESOLVED|UNTESTED|UNSUPPORTED|ERROR|DUPLICATE|PATH): / {
      st = $1; sub(/:$/, "", st)
      name = substr($0, length($1) + 2)
      if (name ~ / \(timeout\)$/) print file "\tTIMEOUT\t" name
      sub(/ \((timeout|eof|GDB internal error|got interactive prompt|the program exited|the program is no longer running|unexpected output|too far|spurious collection|PRMS:? [^)]*)\)$/, "", name)
      print file "\t" st "\t" name
    }' "$1"
}

# gdb.log -> "LOGTIMEOUT" lines: the timeouts that are no test result of their own (gdbserver
# never listening, a test helper giving up).
log_timeouts() {  # log_timeouts GDB.LOG
  awk '
    /^Running .*\.exp \.\.\.$/ { file = $2; sub(/.*\/testsuite\//, "", file); next }
    /Timeout waiting for gdbserver|^ERROR: .*[Tt]imeout|timeout exceeded|: timeout$|^timeout$/ {
      print file "\tLOGTIMEOUT\t" $0
    }' "$1"
}

run_one() {  # run_one STUB BOARD [FOLDER]: FOLDER defaults to <results>/STUB-BOARD
  local s="$1" board="$2" dir="${3:-$results/$1-$2}" bin ipa obj rc=0
  bin="$(stub_binary "$s")"
  ipa="$(stub_ipa "$s")"
  # The testsuite's build folder: programs the ftrace tests build link
  # <objdir>/../../gdbserver/libinproctrace.so (trace-support.exp, get_in_proc_agent).
  obj="$dir/obj/gdb/testsuite"
  mkdir -p "$obj" "$dir/obj/gdbserver"
  rm -f "$dir"/gdb.sum "$dir"/gdb.log "$dir"/run.info
  if [ ! -f "$obj/Makefile" ]; then
    (cd "$obj" && "$testsuite_src/configure" >configure.log 2>&1) ||
      die "configuring $testsuite_src failed: see $obj/configure.log"
  fi
  install -m 0755 "$ipa" "$dir/obj/gdbserver/libinproctrace.so"
  # Nothing from an earlier run (a program linked against an older agent) may be picked up.
  rm -rf "$obj/outputs" "$obj/temp" "$obj/cache"
  echo "gdb-testsuite: $s on $board: ${tests[*]} (log: $dir/make.log)"
  local start=$SECONDS
  # Serial (no -j, MAKEFLAGS cleared): parallel runs on a small machine turn into timeouts.
  (cd "$obj" && MAKEFLAGS='' make check \
      RUNTESTFLAGS="GDB=/usr/bin/gdb GDBSERVER=$bin --target_board=$board" \
      TESTS="${tests[*]}") >"$dir/make.log" 2>&1 || rc=$?
  [ -f "$obj/gdb.sum" ] || die "$s on $board: no gdb.sum (make check exited $rc): see $dir/make.log"
  cp "$obj/gdb.sum" "$obj/gdb.log" "$dir/"
  {
    echo "stub=$s"
    echo "binary=$bin"
    echo "ipa=$ipa"
    echo "board=$board"
    echo "tests=${tests[*]}"
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "seconds=$((SECONDS - start))"
  } >"$dir/run.info"
  echo "gdb-testsuite: $s on $board: done in $((SECONDS - start)) s"
}

# --- comparison --------------------------------------------------------------------------------

tsv_of() {  # tsv_of STUB BOARD: the run's results, normalized (empty when it never ran)
  local dir="$results/$1-$2"
  [ -f "$dir/gdb.sum" ] || return 0
  normalize_sum "$dir/gdb.sum"
  [ ! -f "$dir/gdb.log" ] || log_timeouts "$dir/gdb.log"
}

# Prints the table, totals and regressions of one board; returns 1 when there are regressions or
# a stub has no results.
compare_board() {  # compare_board BOARD [REGRESSIONS-FILE]: that file gets ".exp <TAB> name" lines
  local board="$1" regout="${2:-/dev/null}" racy="$results/tpagent-$1/racy.tsv" tp gs only partial=0
  tp="$(mktemp)"
  gs="$(mktemp)"
  tsv_of tpagent "$board" >"$tp"
  tsv_of gdbserver "$board" >"$gs"
  echo
  echo "=== $board ==="
  local s
  for s in tpagent gdbserver; do
    if [ -f "$results/$s-$board/run.info" ]; then
      echo "$s: $(grep -E '^(binary|date|seconds)=' "$results/$s-$board/run.info" | tr '\n' ' ')"
      if grep -q '^only=' "$results/$s-$board/run.info"; then
        only="$(sed -n 's/^only=//p' "$results/$s-$board/run.info" | wc -w)"
        echo "$s: ran only on the $only .exp file(s) where tpagent's results are not all PASS"
        partial=1
      fi
    else
      echo "$s: no results in $results/$s-$board"
    fi
  done
  local status=0
  [ -f "$racy" ] || racy=/dev/null
  awk -F'\t' -v tpf="$tp" -v regout="$regout" -v racyf="$racy" -v partial="$partial" '
    BEGIN {
      nstat = split("PASS FAIL XFAIL KFAIL XPASS KPASS UNRESOLVED UNTESTED UNSUPPORTED ERROR DUPLICATE PATH", stats, " ")
      while ((getline line < racyf) > 0) { split(line, f, "\t"); isracy[f[1] SUBSEP f[2]] = 1 }
    }
    { side = (FILENAME == tpf) ? "tp" : "gs"; file = $1; st = $2; name = $3
      if (!(file in seen)) { seen[file] = 1; order[++nexp] = file }
      have[side] = 1
      if (st == "RAN") next
      if (st == "TIMEOUT" || st == "LOGTIMEOUT") { tmo[side, file]++; next }
      total[side, st]++
      if (st == "PASS") cnt[side, file, "PASS"]++
      else if (st == "FAIL") cnt[side, file, "FAIL"]++
      else cnt[side, file, "other"]++
      if (st == "UNRESOLVED") unres[side, file]++
      if (st == "PASS") passes[side, file SUBSEP name]++
      if (!((file SUBSEP name) in named)) { named[file SUBSEP name] = 1; names[++nname] = file SUBSEP name }
      last[side, file SUBSEP name] = last[side, file SUBSEP name] (last[side, file SUBSEP name] == "" ? "" : ",") st
    }
    END {
      printf "\n%-40s %22s   %22s\n", "", "tpagent", "gdbserver"
      printf "%-40s %6s %6s %6s   %6s %6s %6s   %s\n", ".exp", "PASS", "FAIL", "other", "PASS", "FAIL", "other", "notes"
      for (i = 1; i <= nexp; i++) {
        e = order[i]; note = ""
        for (k = 1; k <= 2; k++) {
          sd = (k == 1) ? "tp" : "gs"; label = (k == 1) ? "tpagent" : "gdbserver"
          if (tmo[sd, e]) note = note " timeout(" label ")"
          if (unres[sd, e]) note = note " UNRESOLVED(" label ")"
        }
        if (cnt["tp", e, "PASS"] + 0 < cnt["gs", e, "PASS"] + 0) note = note " fewer-passes"
        printf "%-40s %6d %6d %6d   %6d %6d %6d  %s\n", e,
          cnt["tp", e, "PASS"], cnt["tp", e, "FAIL"], cnt["tp", e, "other"],
          cnt["gs", e, "PASS"], cnt["gs", e, "FAIL"], cnt["gs", e, "other"], note
        T["tp", "PASS"] += cnt["tp", e, "PASS"]; T["tp", "FAIL"] += cnt["tp", e, "FAIL"]; T["tp", "other"] += cnt["tp", e, "other"]
        T["gs", "PASS"] += cnt["gs", e, "PASS"]; T["gs", "FAIL"] += cnt["gs", e, "FAIL"]; T["gs", "other"] += cnt["gs", e, "other"]
      }
      printf "%-40s %6d %6d %6d   %6d %6d %6d\n", "total", T["tp", "PASS"], T["tp", "FAIL"], T["tp", "other"],
        T["gs", "PASS"], T["gs", "FAIL"], T["gs", "other"]
      printf "\ntotals%34s %10s %10s\n", "", "tpagent", "gdbserver"
      for (j = 1; j <= nstat; j++)
        if (total["tp", stats[j]] || total["gs", stats[j]])
          printf "  %-38s %10d %10d\n", stats[j], total["tp", stats[j]], total["gs", stats[j]]
      if (!have["tp"] || (!have["gs"] && !partial)) { print "\nno comparison: a stub has no results for this board"; exit 1 }
      # A name can repeat within an .exp: a regression is a name with fewer passes with tpagent.
      nreg = 0; nracy = 0
      for (i = 1; i <= nname; i++) {
        key = names[i]
        if (passes["gs", key] + 0 <= passes["tp", key] + 0) continue
        if (key in isracy) racylist[++nracy] = key
        else reg[++nreg] = key
      }
      printf "\nregressions (PASS with gdbserver, not with tpagent): %d\n", nreg
      cur = ""
      for (i = 1; i <= nreg; i++) {
        split(reg[i], part, SUBSEP)
        print part[1] "\t" part[2] > regout
        if (part[1] != cur) { cur = part[1]; print "  " cur }
        got = last["tp", reg[i]]; if (got == "") got = "missing"
        printf "    %s  [tpagent: %s]\n", part[2], got
      }
      if (nracy) {
        printf "\nracy: %d (failed with tpagent every time, and with gdbserver too when run in tpagent'"'"'s folder)\n", nracy
        for (i = 1; i <= nracy; i++) {
          split(racylist[i], part, SUBSEP)
          printf "  %s\n", part[2]
        }
      }
      exit nreg ? 1 : 0
    }' "$tp" "$gs" || status=1
  rm -f "$tp" "$gs"
  return $status
}

# The .exp files of the run where tpagent's results are not all PASS, or that it has no
# results for: the only ones where gdbserver can pass a test tpagent does not.
needed_exps() {  # needed_exps BOARD
  local ran all g
  ran="$(mktemp)"
  all="$(mktemp)"
  {
    tsv_of tpagent "$1" | awk -F'\t' -v ranf="$ran" '
      $2 == "RAN" { print $1 > ranf; next }
      $2 != "PASS" { print $1 }'
    for g in "${tests[@]}"; do (cd "$testsuite_src" && { compgen -G "$g" || true; }); done | sort -u >"$all"
    sort -u "$ran" | comm -23 "$all" -
  } | sort -u
  rm -f "$ran" "$all"
}

# The run.info gets "only=" (the files run, maybe none): the comparison then takes gdbserver's
# results as partial.
run_gdbserver_where_needed() {  # run_gdbserver_where_needed BOARD
  local saved=("${tests[@]}") needed dir="$results/gdbserver-$1"
  needed="$(needed_exps "$1" | tr '\n' ' ')"
  echo "gdb-testsuite: gdbserver only where tpagent's results are not all PASS: ${needed:-none}"
  if [ -n "${needed// /}" ]; then
    # shellcheck disable=SC2206
    tests=($needed)
    run_one gdbserver "$1"
    tests=("${saved[@]}")
  else  # (empty results, so the comparison has them)
    mkdir -p "$dir"
    : >"$dir/gdb.sum"
    : >"$dir/gdb.log"
    printf 'stub=gdbserver\nbinary=%s\nboard=%s\ntests=\nseconds=0\n' "$gdbserver" "$1" >"$dir/run.info"
  fi
  echo "only=$needed" >>"$dir/run.info"
}

# --- main --------------------------------------------------------------------------------------

if [ -z "$compare_only" ]; then
  check_setup
  check_stubs
  unpack_sources
  for board in "${boards[@]}"; do
    for s in "${stubs[@]}"; do
      if [ "$s" = gdbserver ] && [ -n "$where_needed" ]; then
        run_gdbserver_where_needed "$board"
      else
        run_one "$s" "$board"
      fi
    done
  done
fi

# A regression may be a race in the test itself: gdb's MI tests match output chunks as expect
# reads them, so how the output of two commands is split (which depends on timing, and even on
# the length of the folder names) decides some results, with either stub. Each .exp with
# regressions runs again against tpagent, up to $retries times, until its regressions are gone;
# the latest run's results replace the earlier ones (the first run stays in gdb.sum.first-run).
# A test that still fails then runs against gdbserver in tpagent's own folder (the same paths and
# programs), up to $retries times: if gdbserver fails it there too, the test is listed as racy
# (in <results>/tpagent-BOARD/racy.tsv) and not as a regression.
retries="${TPAGENT_GDBSUITE_RETRIES:-4}"

regression_exps() {  # regression_exps BOARD: the .exp files with regressions
  local names
  names="$(mktemp)"
  (compare_board "$1" "$names" >/dev/null 2>&1 || true)
  cut -f1 "$names" | sort -u
  rm -f "$names"
}

# Replaces, in DIR's gdb.sum, the results of the .exp files EXPS with those of the run in NEW.
merge_sum() {  # merge_sum DIR NEW-SUM EXPS
  local dir="$1" new="$2" exps="$3"
  awk -v retried="$exps" '
    BEGIN { n = split(retried, r, " "); for (i = 1; i <= n; i++) skip[r[i]] = 1 }
    match($0, /^[A-Z]+: [^ :]+\.exp/) { split(substr($0, RSTART, RLENGTH), f, ": "); if (f[2] in skip) next }
    { print }' "$dir/gdb.sum" >"$dir/gdb.sum.merged"
  grep -E '^(Running .*\.exp \.\.\.$|[A-Z]+: )' "$new" >>"$dir/gdb.sum.merged" || true
  mv "$dir/gdb.sum.merged" "$dir/gdb.sum"
}

retry_regressions() {  # retry_regressions BOARD
  local board="$1" dir="$results/tpagent-$1" exps attempt
  rm -f "$dir/racy.tsv"
  exps="$(regression_exps "$board" | tr '\n' ' ')"
  [ -n "${exps// /}" ] || return 0
  local saved=("${tests[@]}") first="$exps"
  cp "$dir/gdb.sum" "$dir/gdb.sum.first-run"
  cp "$dir/gdb.log" "$dir/gdb.log.first-run"
  local sum="$dir/gdb.sum.kept" log="$dir/gdb.log.kept"
  for ((attempt = 1; attempt <= retries; attempt++)); do
    # shellcheck disable=SC2206
    tests=($exps)
    echo "gdb-testsuite: running again against tpagent ($attempt of $retries), for their regressions: $exps"
    mv "$dir/gdb.sum" "$sum"
    mv "$dir/gdb.log" "$log"
    run_one tpagent "$board"
    mv "$dir/gdb.sum" "$dir/gdb.sum.retry"
    mv "$sum" "$dir/gdb.sum"
    merge_sum "$dir" "$dir/gdb.sum.retry" "$exps"
    cat "$dir/gdb.log" >>"$log"
    mv "$log" "$dir/gdb.log"
    exps="$(regression_exps "$board" | tr '\n' ' ')"
    [ -n "${exps// /}" ] || break
  done
  flaky_note+=$'\n'"  $board: ran again $((attempt > retries ? retries : attempt)) time(s): $first"
  if [ -n "${exps// /}" ]; then
    check_racy "$board" "$exps"
  fi
  tests=("${saved[@]}")
}

# The tests still failing with tpagent, run against gdbserver in tpagent's folder: those that
# fail with gdbserver there too go to racy.tsv.
check_racy() {  # check_racy BOARD EXPS
  local board="$1" dir="$results/tpagent-$1" exps="$2" attempt left racy
  [[ " ${stubs[*]} " == *" gdbserver "* ]] || return 0
  left="$(mktemp)"
  racy="$dir/racy.tsv"
  : >"$racy"
  (compare_board "$board" "$left" >/dev/null 2>&1 || true)
  mkdir -p "$dir/kept"
  for ((attempt = 1; attempt <= retries; attempt++)); do
    # shellcheck disable=SC2206
    tests=($exps)
    echo "gdb-testsuite: is it the test? gdbserver in tpagent's folder ($attempt of $retries): $exps"
    mv "$dir/gdb.sum" "$dir/gdb.log" "$dir/run.info" "$dir/kept/"
    run_one gdbserver "$board" "$dir"
    mv "$dir/gdb.sum" "$dir/gdb.sum.gdbserver-$attempt"
    mv "$dir/gdb.log" "$dir/gdb.log.gdbserver-$attempt"
    mv "$dir/run.info" "$dir/run.info.gdbserver-$attempt"
    mv "$dir/kept/gdb.sum" "$dir/kept/gdb.log" "$dir/kept/run.info" "$dir/"
    # A name gdbserver does not pass there, as often as it repeats, is racy.
    normalize_sum "$dir/gdb.sum.gdbserver-$attempt" >"$left.gs"
    awk -F'\t' '
      FILENAME == ARGV[1] { want[$1 SUBSEP $2] = 1; next }
      $2 == "PASS" { pass[$1 SUBSEP $3] = 1 }
      END { for (k in want) if (!(k in pass)) { split(k, p, SUBSEP); print p[1] "\t" p[2] } }
    ' "$left" "$left.gs" >>"$racy"
    rm -f "$left.gs"
    sort -u -o "$racy" "$racy"
    # Left: what gdbserver has passed every time so far.
    awk -F'\t' 'FILENAME == ARGV[1] { r[$1 SUBSEP $2] = 1; next } !(($1 SUBSEP $2) in r)' "$racy" "$left" >"$left.new"
    mv "$left.new" "$left"
    [ -s "$left" ] || break
    exps="$(cut -f1 "$left" | sort -u | tr '\n' ' ')"
  done
  rmdir "$dir/kept" 2>/dev/null || true
  rm -f "$left"
  [ -s "$racy" ] || rm -f "$racy"
}

flaky_note=""
exit_status=0
for board in "${boards[@]}"; do
  [ -n "$compare_only" ] || retry_regressions "$board"
  compare_board "$board" || exit_status=1
done
if [ -n "$flaky_note" ]; then
  echo
  echo "run again against tpagent (their first run is in gdb.sum.first-run; the regressions"
  echo "above, if any, failed every time):$flaky_note"
fi
timeouts_note() {
  local board s
  for board in "${boards[@]}"; do
    for s in tpagent gdbserver; do
      [ -f "$results/$s-$board/gdb.sum" ] || continue
      tsv_of "$s" "$board" | awk -F'\t' -v who="$s on $board" '
        $2 == "TIMEOUT" || $2 == "LOGTIMEOUT" || $2 == "UNRESOLVED" { n[$1]++ }
        END { for (e in n) printf "  %s: %s (%d timeout/UNRESOLVED lines)\n", who, e, n[e] }' | sort
    done
  done
}
notes="$(timeouts_note)"
if [ -n "$notes" ]; then
  echo
  echo "timeouts and UNRESOLVED (details in <results>/<stub>-<board>/gdb.log):"
  echo "$notes"
fi
echo
echo "results: $results/<stub>-<board>/{gdb.sum,gdb.log}"
exit $exit_status
