#!/usr/bin/env bash
# Fails if any tracked C++ file differs from what clang-format (.clang-format) makes of it.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files '*.cpp' '*.hpp' '*.c' '*.h' ':!tests/vectors' | xargs clang-format --dry-run -Werror
