// SDT marker operands in x86-64 AT&T syntax (arch::Architecture::parse_sdt_operand).
#pragma once
#include "arch/sdt_arguments.hpp"
#include <string_view>

namespace tpagent::arch::x86_64 {

// "%eax", "%ah", "$5", "$sym", "-16(%rbp)", "8(%rax,%rbx,4)", "(,%rcx,8)", "sym(%rip)",
// "sym+8(%rip)", "0x601040".
SdtArgument parse_sdt_operand(std::string_view operand, const SdtSymbolResolver& symbol);

} // namespace tpagent::arch::x86_64
