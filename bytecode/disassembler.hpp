// Text form of agent expressions, one instruction per line, in the layout gdb's
// `maint agent` prints: "<offset right-aligned to 3>  <name>[ <operand>]", operands decimal.
#pragma once
#include "bytecode/program.hpp"
#include <cstdint>
#include <span>
#include <string>

namespace tpagent::bytecode {

std::string disassemble(const Program& program);

// For unvalidated bytes (logs of rejected expressions, offline tools): decodes as far as
// it can and ends with a "<offset>  (bad: reason)" line at the first undecodable byte.
std::string disassemble(std::span<const std::uint8_t> bytes);

} // namespace tpagent::bytecode
