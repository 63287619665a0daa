// Decoding an SDT marker's argument string ("-4@%eax 8@-16(%rbp)", the note's last field) into
// SdtArgument records: the size prefix and the layout are common, the operand is the ISA's
// (Architecture::parse_sdt_operand).
#pragma once
#include "arch/sdt_argument.hpp"
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace tpagent::arch {

class Architecture;

// The run-time address of a symbol an operand names ("counter(%rip)"); nullopt: unknown.
using SdtSymbolResolver = std::function<std::optional<std::uint64_t>(std::string_view)>;

// One record per space-separated argument, in order; Kind::Unknown where one cannot be decoded.
std::vector<SdtArgument> parse_sdt_arguments(std::string_view text, const Architecture& arch,
                                             const SdtSymbolResolver& symbol);

// A displacement or immediate as assemblers write them: "-16", "0x10", "name", "name+8",
// "name-0x8"; nullopt when malformed or the name is unknown.
std::optional<std::int64_t> parse_sdt_number(std::string_view text,
                                             const SdtSymbolResolver& symbol);

} // namespace tpagent::arch
