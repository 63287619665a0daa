// Native compilation of validated agent expressions. An ISA backend (arch/<isa>/ax_jit.cpp)
// turns a Program into machine code that follows the C calling convention of CompiledFn and
// calls the same rt:: helpers as the interpreter for anything that leaves the expression.
// Results (value, status, fault offset and address) equal the interpreter's.
#pragma once
#include "bytecode/context.hpp"
#include "bytecode/program.hpp"
#include "protocol/result.hpp"
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tpagent::bytecode {

using CompiledFn = EvalStatus (*)(const Context* context, EvalOut* out);

class CompilerBackend {
  public:
    virtual ~CompilerBackend() = default;
    virtual const char* name() const = 0;
    // Machine code for `program`. It may embed the addresses of program's own data
    // (printf formats): compile() keeps that Program alive as long as the code.
    virtual Result<std::vector<std::uint8_t>> translate(const Program& program) const = 0;
};

// The backend for the machine tpagent runs on; defined by arch/<isa>/ax_jit.cpp.
const CompilerBackend& host_compiler_backend();

// Code in an executable mapping (written, then made read+execute; never both).
class CompiledProgram {
  public:
    EvalStatus run(const Context& context, EvalOut& out) const { return fn_(&context, &out); }
    Result<std::uint64_t> evaluate(const Context& context) const;
    std::size_t code_size() const { return size_; }
    const Program& program() const { return *program_; }

    CompiledProgram(CompiledProgram&& other) noexcept;
    CompiledProgram& operator=(CompiledProgram&& other) noexcept;
    CompiledProgram(const CompiledProgram&) = delete;
    CompiledProgram& operator=(const CompiledProgram&) = delete;
    ~CompiledProgram();

  private:
    friend Result<CompiledProgram> compile(const Program&, const CompilerBackend&);
    CompiledProgram() = default;

    std::shared_ptr<const Program> program_;
    void* code_ = nullptr;
    std::size_t size_ = 0; // of the mapping
    CompiledFn fn_ = nullptr;
};

Result<CompiledProgram> compile(const Program& program, const CompilerBackend& backend);
inline Result<CompiledProgram> compile(const Program& program) {
    return compile(program, host_compiler_backend());
}

} // namespace tpagent::bytecode
