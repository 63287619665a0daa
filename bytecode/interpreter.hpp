// The reference evaluator: runs a validated Program on a 64-bit stack.
#pragma once
#include "bytecode/context.hpp"
#include "bytecode/program.hpp"
#include "base/result.hpp"
#include <cstdint>

namespace tpagent::bytecode {

// For the hot path: no allocation, no exceptions. On Ok, out.value is the result.
// run_insns is the same on a bare instruction array (copied out of a Program, e.g. into the
// in-process agent's shared memory); formats may be null, and a printf then fails.
EvalStatus run_insns(const Insn* insns, std::uint32_t backward_jump_budget,
                     const PrintfFormat* formats, const Context& context, EvalOut& out);
inline EvalStatus run(const Program& program, const Context& context, EvalOut& out) {
    return run_insns(program.insns().data(), program.backward_jump_budget(),
                     program.formats().data(), context, out);
}

// Convenience wrapper: the value, or describe_failure()'s Error.
Result<std::uint64_t> evaluate(const Program& program, const Context& context);

} // namespace tpagent::bytecode
