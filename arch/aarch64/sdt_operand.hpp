// SDT marker operands in AArch64 assembler syntax (arch::Architecture::parse_sdt_operand).
#pragma once
#include "arch/sdt_arguments.hpp"
#include <string_view>

namespace tpagent::arch::aarch64 {

// "x0", "w1", "sp", "#5", "5", "[x29]", "[sp, 16]", "[x1, #-8]".
SdtArgument parse_sdt_operand(std::string_view operand, const SdtSymbolResolver& symbol);

} // namespace tpagent::arch::aarch64
