#include "bytecode/context.hpp"
#include "bytecode/interpreter.hpp"
#include <algorithm>
#include <fmt/format.h>

namespace tpagent::bytecode {

const char* to_string(EvalStatus status) {
    switch (status) {
    case EvalStatus::Ok:
        return "ok";
    case EvalStatus::MemoryError:
        return "memory unreadable";
    case EvalStatus::RegisterError:
        return "register unavailable";
    case EvalStatus::DivideByZero:
        return "division by zero";
    case EvalStatus::TsvError:
        return "trace state variable unavailable";
    case EvalStatus::CollectError:
        return "collection failed";
    case EvalStatus::PrintError:
        return "printf output failed";
    case EvalStatus::StepLimit:
        return "step limit reached";
    }
    return "unknown failure";
}

Error describe_failure(const Program& program, EvalStatus status, const EvalOut& out) {
    const auto insns = program.insns();
    auto it = std::find_if(insns.begin(), insns.end(),
                           [&](const Insn& i) { return i.offset == out.fault_offset; });
    const char* name = it == insns.end() ? "?" : op_info(it->op).name;
    std::string text = fmt::format("offset {} ({}): {}", out.fault_offset, name, to_string(status));
    switch (status) {
    case EvalStatus::MemoryError:
    case EvalStatus::CollectError:
        text += fmt::format(" at 0x{:x}", out.fault_address);
        break;
    case EvalStatus::RegisterError:
    case EvalStatus::TsvError:
        text += fmt::format(" ({})", out.fault_address);
        break;
    default:
        break;
    }
    const ErrorCode code =
        status == EvalStatus::MemoryError ? ErrorCode::MemoryAccess : ErrorCode::BadBytecode;
    return make_error(code, std::move(text));
}

// Here rather than beside run(): the interpreter itself stays free of fmt and allocation, so
// the in-process agent can link it alone.
Result<std::uint64_t> evaluate(const Program& program, const Context& context) {
    EvalOut out;
    const EvalStatus s = run(program, context, out);
    if (s != EvalStatus::Ok) return describe_failure(program, s, out);
    return out.value;
}

} // namespace tpagent::bytecode
