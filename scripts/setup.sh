#!/usr/bin/env bash
# Installs every Debian package tpagent's build, tests, fuzzers and benchmarks need.
# Idempotent: does nothing when all packages are already present.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config clang clang-format clang-tidy
  libclang-rt-14-dev gdb gdbserver
  libboost-dev libfmt-dev libspdlog-dev catch2 libbenchmark-dev
  libzydis-dev libcapstone-dev libunicorn-dev
  python3 python3-pytest python3-pytest-timeout socat valgrind
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
