#include "bytecode/opcodes.hpp"
#include <array>

namespace tpagent::bytecode {
namespace {

struct Row {
    std::uint8_t value;
    OpInfo info;
};

// Operand sizes and stack effects as in the manual's opcode table (gdbsupport/ax.def).
// pick and printf have operand-dependent effects; the validator computes those.
constexpr Row kRows[] = {
    {0x01, {"float", 0, 0, 0, Flow::Next, false}},
    {0x02, {"add", 0, 2, 1, Flow::Next, true}},
    {0x03, {"sub", 0, 2, 1, Flow::Next, true}},
    {0x04, {"mul", 0, 2, 1, Flow::Next, true}},
    {0x05, {"div_signed", 0, 2, 1, Flow::Next, true}},
    {0x06, {"div_unsigned", 0, 2, 1, Flow::Next, true}},
    {0x07, {"rem_signed", 0, 2, 1, Flow::Next, true}},
    {0x08, {"rem_unsigned", 0, 2, 1, Flow::Next, true}},
    {0x09, {"lsh", 0, 2, 1, Flow::Next, true}},
    {0x0a, {"rsh_signed", 0, 2, 1, Flow::Next, true}},
    {0x0b, {"rsh_unsigned", 0, 2, 1, Flow::Next, true}},
    {0x0c, {"trace", 0, 2, 0, Flow::Next, true}},
    {0x0d, {"trace_quick", 1, 1, 1, Flow::Next, true}},
    {0x0e, {"log_not", 0, 1, 1, Flow::Next, true}},
    {0x0f, {"bit_and", 0, 2, 1, Flow::Next, true}},
    {0x10, {"bit_or", 0, 2, 1, Flow::Next, true}},
    {0x11, {"bit_xor", 0, 2, 1, Flow::Next, true}},
    {0x12, {"bit_not", 0, 1, 1, Flow::Next, true}},
    {0x13, {"equal", 0, 2, 1, Flow::Next, true}},
    {0x14, {"less_signed", 0, 2, 1, Flow::Next, true}},
    {0x15, {"less_unsigned", 0, 2, 1, Flow::Next, true}},
    {0x16, {"ext", 1, 1, 1, Flow::Next, true}},
    {0x17, {"ref8", 0, 1, 1, Flow::Next, true}},
    {0x18, {"ref16", 0, 1, 1, Flow::Next, true}},
    {0x19, {"ref32", 0, 1, 1, Flow::Next, true}},
    {0x1a, {"ref64", 0, 1, 1, Flow::Next, true}},
    {0x1b, {"ref_float", 0, 1, 1, Flow::Next, false}},
    {0x1c, {"ref_double", 0, 1, 1, Flow::Next, false}},
    {0x1d, {"ref_long_double", 0, 1, 1, Flow::Next, false}},
    {0x1e, {"l_to_d", 0, 1, 1, Flow::Next, false}},
    {0x1f, {"d_to_l", 0, 1, 1, Flow::Next, false}},
    {0x20, {"if_goto", 2, 1, 0, Flow::CondJump, true}},
    {0x21, {"goto", 2, 0, 0, Flow::Jump, true}},
    {0x22, {"const8", 1, 0, 1, Flow::Next, true}},
    {0x23, {"const16", 2, 0, 1, Flow::Next, true}},
    {0x24, {"const32", 4, 0, 1, Flow::Next, true}},
    {0x25, {"const64", 8, 0, 1, Flow::Next, true}},
    {0x26, {"reg", 2, 0, 1, Flow::Next, true}},
    {0x27, {"end", 0, 0, 0, Flow::Stop, true}},
    {0x28, {"dup", 0, 1, 2, Flow::Next, true}},
    {0x29, {"pop", 0, 1, 0, Flow::Next, true}},
    {0x2a, {"zero_ext", 1, 1, 1, Flow::Next, true}},
    {0x2b, {"swap", 0, 2, 2, Flow::Next, true}},
    {0x2c, {"getv", 2, 0, 1, Flow::Next, true}},
    {0x2d, {"setv", 2, 1, 1, Flow::Next, true}},
    // The table says tracev pushes one entry; we push the variable's value.
    {0x2e, {"tracev", 2, 0, 1, Flow::Next, true}},
    {0x2f, {"tracenz", 0, 2, 0, Flow::Next, true}},
    {0x30, {"trace16", 2, 1, 1, Flow::Next, true}},
    {0x32, {"pick", 1, 0, 1, Flow::Next, true}},
    {0x33, {"rot", 0, 3, 3, Flow::Next, true}},
    // numargs (1 byte) + string length (2 bytes); the string itself follows.
    {0x34, {"printf", 3, 2, 0, Flow::Next, true}},
};

constexpr std::array<OpInfo, 256> make_table() {
    std::array<OpInfo, 256> t{};
    for (auto& e : t)
        e = OpInfo{nullptr, 0, 0, 0, Flow::Next, false};
    for (const Row& r : kRows)
        t[r.value] = r.info;
    return t;
}

constexpr std::array<OpInfo, 256> kTable = make_table();

} // namespace

const OpInfo& op_info(std::uint8_t byte) {
    return kTable[byte];
}

} // namespace tpagent::bytecode
