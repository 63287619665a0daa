// The reference evaluator: runs a validated Program on a 64-bit stack.
#pragma once
#include "bytecode/context.hpp"
#include "bytecode/program.hpp"
#include "protocol/result.hpp"
#include <cstdint>

namespace tpagent::bytecode {

// For the hot path: no allocation, no exceptions. On Ok, out.value is the result.
EvalStatus run(const Program& program, const Context& context, EvalOut& out);

// Convenience wrapper: the value, or describe_failure()'s Error.
Result<std::uint64_t> evaluate(const Program& program, const Context& context);

} // namespace tpagent::bytecode
