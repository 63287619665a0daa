// One Zydis decoder (64-bit mode) for everything in arch/x86_64 that reads instructions.
#pragma once
#include "base/result.hpp"
#include <Zydis/Zydis.h>
#include <cstdint>
#include <span>

namespace tpagent::arch::x86_64 {

struct Decoded {
    ZydisDecodedInstruction insn;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
};

// The instruction at the start of `bytes`; `addr` is for the error text.
Result<Decoded> decode(std::span<const std::uint8_t> bytes, std::uint64_t addr);

} // namespace tpagent::arch::x86_64
