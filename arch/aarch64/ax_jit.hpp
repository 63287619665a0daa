// The AArch64 agent-expression compiler backend (host_compiler_backend() on arm64; built on
// other hosts too, where its code is only run emulated).
#pragma once
#include "bytecode/compiler.hpp"

namespace tpagent::arch::aarch64 {

const bytecode::CompilerBackend& ax_backend();

} // namespace tpagent::arch::aarch64
