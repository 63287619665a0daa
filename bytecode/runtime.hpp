// Slow paths that both the interpreter and compiled code call: everything that leaves the
// expression (memory outside the direct window, registers, variables, collection, printf).
// Each returns {value, status}; under the SysV x86-64 ABI that pair comes back in rax:rdx,
// so compiled code tests rdx without touching memory. On failure the helper has set
// out->fault_address; the caller sets out->fault_offset.
#pragma once
#include "bytecode/context.hpp"
#include "bytecode/printf_flat.hpp"
#include <cstdint>
#include <cstring>

namespace tpagent::bytecode::rt {

struct HelperResult {
    std::uint64_t value;
    std::uint64_t status; // an EvalStatus
};

// Loads size (1, 2, 4, 8) bytes from the direct window, if the whole load is inside it.
inline bool window_load(const Context& c, std::uint64_t addr, unsigned size, std::uint64_t& v) {
    const std::uint64_t off = addr - c.window_start;
    if (off >= c.window_loads) return false;
    v = 0;
    std::memcpy(&v, c.window_host + off, size); // little-endian target == host
    return true;
}

// Memory through the callback; callers try window_load() first.
HelperResult read(const Context* c, EvalOut* out, std::uint64_t addr, std::uint64_t size);
HelperResult reg(const Context* c, EvalOut* out, std::uint64_t regnum, std::uint64_t);
HelperResult getv(const Context* c, EvalOut* out, std::uint64_t num, std::uint64_t);
HelperResult setv(const Context* c, EvalOut* out, std::uint64_t num, std::uint64_t value);
HelperResult tracev(const Context* c, EvalOut* out, std::uint64_t num, std::uint64_t);
HelperResult trace(const Context* c, EvalOut* out, std::uint64_t addr, std::uint64_t len);
HelperResult tracenz(const Context* c, EvalOut* out, std::uint64_t addr, std::uint64_t len);
// args[0] is the first printf argument.
HelperResult printf(const Context* c, EvalOut* out, const PrintfFormat* format,
                    const std::uint64_t* args);
// The same for a flattened format, with no C library (the in-process agent's printf, whose
// compiled code passes the format's copy in the program).
HelperResult printf_flat(const Context* c, EvalOut* out, const FlatFormat* format,
                         const std::uint64_t* args);

} // namespace tpagent::bytecode::rt
