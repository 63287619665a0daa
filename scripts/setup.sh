#!/usr/bin/env bash
# Installs every Debian package tpagent's build, tests, fuzzers and benchmarks need.
# Idempotent: does nothing when all packages are already present.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config clang clang-format clang-tidy
  libclang-rt-14-dev gdb gdbserver
  libboost-dev libfmt-dev libspdlog-dev catch2 libbenchmark-dev
  libzydis-dev libcapstone-dev libunicorn-dev nlohmann-json3-dev libcli11-dev
  # the branch-trace tests check tpagent's XML against the manual's DTDs
  libxml2-utils
  # man pages from --help, the .deb, and the HTML report's test in a headless browser
  help2man dpkg-dev chromium
  python3 python3-pytest python3-pytest-timeout socat valgrind
  # a real program to trace: the buffer-memory tests on redis-server under redis-benchmark
  redis-server
  # a real forking server: trace-follow-fork on PostgreSQL's backends (psql the clients)
  postgresql
  # <sys/sdt.h>: the static tracepoint tests' programs carry SDT markers
  systemtap-sdt-dev
  # musl-gcc: fast tracepoints in musl programs (the in-process agent's self-mapped image)
  musl-tools
  # the same for the arm64 board's static musl program (musl's arm64 libraries and gcc specs)
  musl-dev:arm64
  # a Go program's fast tracepoints (pads on agent stacks), static and with cgo
  golang-go
  # gdb's own testsuite against tpagent and gdbserver (scripts/gdb-testsuite.sh)
  gdb-source dejagnu
  # arm64 boards: the cross compiler, arm64 libraries, the emulated board, gdb for arm64, and
  # qemu user mode for the arm64 build's own unit tests
  g++-aarch64-linux-gnu libfmt-dev:arm64 libspdlog-dev:arm64 qemu-system-arm gdb-multiarch cpio
  qemu-user-static
)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
updated=""
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo dpkg --add-architecture arm64
  $sudo apt-get update -qq
  updated=1
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  [ -n "$updated" ] || $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
