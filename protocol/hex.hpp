// Hex codecs for the RSP: numbers and byte strings, case-insensitive on input, lower-case on
// output.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tpagent::protocol {

std::string to_hex(std::span<const std::uint8_t> bytes);
std::string to_hex(std::string_view text);
void append_hex(std::string& out, std::span<const std::uint8_t> bytes);

// Even number of hex digits only.
Result<std::vector<std::uint8_t>> from_hex(std::string_view hex);
Result<std::string> hex_to_text(std::string_view hex);

// 1..16 hex digits, no prefix. Whole string must be consumed.
Result<std::uint64_t> parse_hex_u64(std::string_view digits);
// As above, with an optional leading '-' (two's complement result).
Result<std::int64_t> parse_hex_i64(std::string_view digits);
// Minimal lower-case hex digits ("0" for zero).
std::string hex_u64(std::uint64_t value);

int hex_digit_value(char c); // -1 if not a hex digit

// Splits on every `sep`; empty fields are kept.
std::vector<std::string_view> split(std::string_view text, char sep);
// Without leading and trailing white space.
std::string_view trim(std::string_view text);

} // namespace tpagent::protocol
