// The agent-expression compiler backend for the machine tpagent runs on. bytecode/ defines
// what a backend is; each arch/<isa>/ax_jit.cpp is one, so bytecode/ never links to arch/.
#pragma once
#include "bytecode/compiler.hpp"

namespace tpagent::arch {

const bytecode::CompilerBackend& host_compiler_backend();

inline Result<bytecode::CompiledProgram> compile_for_host(const bytecode::Program& program) {
    return bytecode::compile(program, host_compiler_backend());
}

} // namespace tpagent::arch
