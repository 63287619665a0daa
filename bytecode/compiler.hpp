// Native compilation of validated agent expressions. An ISA backend (arch/<isa>/ax_jit.cpp)
// turns a Program into machine code that follows the C calling convention of CompiledFn and
// calls the same rt:: helpers as the interpreter (or copies of them elsewhere, see
// HelperAddresses) for anything that leaves the expression.
// Results (value, status, fault offset and address) equal the interpreter's.
#pragma once
#include "bytecode/context.hpp"
#include "bytecode/program.hpp"
#include "base/result.hpp"
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace tpagent::bytecode {

using CompiledFn = EvalStatus (*)(const Context* context, EvalOut* out);

// Where the code calls the rt:: helpers (bytecode/runtime.hpp): absolute addresses in the
// process that will run the code, which need not be this one (a collector in the traced
// program has its own copies of the helpers). Each one must be a function with the
// signature and semantics of its rt:: namesake. printf == 0 means printf is unavailable.
struct HelperAddresses {
    std::uint64_t read = 0, reg = 0, getv = 0, setv = 0, tracev = 0, trace = 0, tracenz = 0,
                  printf = 0;
};

// This process's rt:: functions, printf included.
HelperAddresses host_helper_addresses();

// Where register N (a gdb register number, the index) lies in the block Context::registers
// points to, for `reg N` compiled as one load, zero-extended from `size` bytes (1, 2, 4 or 8).
// size 0, or a number past the end: the reg helper's call.
struct StagedRegister {
    std::uint32_t offset = 0;
    std::uint8_t size = 0;
    bool operator==(const StagedRegister&) const = default;
};
using StagedRegisterLayout = std::vector<StagedRegister>;

// Where each of a program's printf formats (Program::formats(), by index) lies flattened
// (bytecode/printf_flat.hpp) in the process that runs the code, whose helpers.printf then
// takes a FlatFormat, as rt::printf_flat does. Empty: helpers.printf is rt::printf's like,
// given this process's PrintfFormat.
using FormatAddresses = std::vector<std::uint64_t>;

class CompilerBackend {
  public:
    virtual ~CompilerBackend() = default;
    virtual const char* name() const = 0;
    // Machine code for `program`, calling the helpers at `helpers`.
    //
    // The code is position-independent except for the helper addresses: it may be copied
    // to any address, in this process or another, and run there. Its only absolute
    // addresses are the helpers' (as immediates); it has no rip-relative references, jumps
    // only inside itself, and reaches data only through the Context and EvalOut it is
    // given and its own stack.
    //
    // The one exception is printf: its code embeds the address of `program`'s format (in
    // this process, so compile() keeps that Program alive as long as the code), or the one
    // `formats` gives. With helpers.printf == 0, programs with a reachable printf fail with
    // ErrorCode::Unsupported.
    //
    // With a non-empty `staged` layout, the code reads the registers it lists from
    // Context::registers, which must then be set wherever it runs.
    virtual Result<std::vector<std::uint8_t>> translate(const Program& program,
                                                        const HelperAddresses& helpers,
                                                        const StagedRegisterLayout& staged,
                                                        const FormatAddresses& formats) const = 0;
    Result<std::vector<std::uint8_t>> translate(const Program& program,
                                                const HelperAddresses& helpers,
                                                const StagedRegisterLayout& staged) const {
        return translate(program, helpers, staged, {});
    }
    Result<std::vector<std::uint8_t>> translate(const Program& program,
                                                const HelperAddresses& helpers) const {
        return translate(program, helpers, {}, {});
    }
    // The same, calling this process's helpers.
    Result<std::vector<std::uint8_t>> translate(const Program& program) const {
        return translate(program, host_helper_addresses());
    }
};

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

// With the backend for this machine: arch::compile_for_host (arch/compiler_backend.hpp).
Result<CompiledProgram> compile(const Program& program, const CompilerBackend& backend);

} // namespace tpagent::bytecode
