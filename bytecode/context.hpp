// What an agent expression may touch while it runs: the traced thread's registers and
// memory, trace state variables, the trace frame being collected, and dprintf output.
// A plain struct of function pointers (no virtual calls) so compiled code can call the
// same entry points as the interpreter.
#pragma once
#include "bytecode/program.hpp"
#include "base/result.hpp"
#include <cstddef>
#include <cstdint>

namespace tpagent::bytecode {

// Why an evaluation stopped early. The tracepoint engine reports these as `terror`.
enum class EvalStatus : std::uint32_t {
    Ok = 0,
    MemoryError,   // memory at fault_address could not be read
    RegisterError, // register fault_address is unavailable (or wider than 8 bytes)
    DivideByZero,
    TsvError,     // trace state variable fault_address could not be read or written
    CollectError, // the collector refused a range (buffer full, unreadable)
    PrintError,   // printf output could not be delivered
    StepLimit,    // more backward jumps than Limits::max_backward_jumps
};
const char* to_string(EvalStatus status);

// Result of one evaluation. On failure fault_offset is the byte offset of the instruction
// that failed, and fault_address the address / register / variable number involved.
struct EvalOut {
    std::uint64_t value = 0; // top of stack at `end` (0 if the stack is empty)
    std::uint64_t fault_address = 0;
    std::uint32_t fault_offset = 0;
};

// Every callback returns false on failure and may be null (the opcode then fails).
struct Context {
    void* user = nullptr;
    // Reads len bytes at addr; false if any byte is unreadable. Must never fault.
    bool (*read_memory)(void* user, std::uint64_t addr, void* out, std::size_t len) = nullptr;
    // Register by gdb number, zero-extended from its width; false if unavailable or wider
    // than 8 bytes.
    bool (*read_register)(void* user, unsigned regnum, std::uint64_t* value) = nullptr;
    bool (*get_tsv)(void* user, unsigned num, std::int64_t* value) = nullptr;
    bool (*set_tsv)(void* user, unsigned num, std::int64_t value) = nullptr;
    // trace, trace_quick, trace16, tracenz (after finding the NUL): record len bytes at addr.
    bool (*collect_memory)(void* user, std::uint64_t addr, std::uint64_t len) = nullptr;
    // tracev: record the variable's current value.
    bool (*collect_tsv)(void* user, unsigned num, std::int64_t value) = nullptr;
    // printf output, one call per printf opcode.
    bool (*print)(void* user, const char* text, std::size_t len) = nullptr;

    // Optional direct-load window: target addresses [start, start+len) are readable at
    // host address window_host + (addr - start) without a callback (in-process agent, or a
    // snapshot). Set with set_direct_window(); loads outside it use read_memory.
    std::uint64_t window_start = 0;
    std::uint64_t window_loads = 0; // offsets below this can load 8 bytes
    const std::uint8_t* window_host = nullptr;

    void set_direct_window(std::uint64_t start, const void* host, std::uint64_t len) {
        window_start = start;
        window_loads = len >= 8 ? len - 7 : 0;
        window_host = static_cast<const std::uint8_t*>(host);
    }

    // The registers a pad staged (the in-process agent): code compiled with a
    // StagedRegisterLayout (bytecode/compiler.hpp) loads `reg` operands from here directly, and
    // must only run with it set. The interpreter and code compiled without one never read it.
    const std::uint8_t* registers = nullptr;
};

// Turns a failed evaluation into an Error (MemoryAccess for memory faults, BadBytecode for
// the rest) with text like "offset 10 (rem_signed): division by zero".
Error describe_failure(const Program& program, EvalStatus status, const EvalOut& out);

} // namespace tpagent::bytecode
