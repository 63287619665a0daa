// Register names, sizes and block offsets from a target description (the `tdesc` lines of a
// trace file). gdb's `g` packet, and so a trace frame's R block, holds every register in
// regnum order, so offsets are the running sum of the sizes in that order.
#pragma once
#include "base/result.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tpagent::tracefile {

struct RegisterInfo {
    std::string name;
    std::string type; // as written in the description ("int64", "vec512", ...), may be empty
    unsigned regnum = 0;
    std::size_t offset = 0; // in the register block
    std::size_t size = 0;   // bytes
};

struct RegisterLayout {
    std::string architecture;            // <architecture> text, may be empty
    std::vector<RegisterInfo> registers; // regnum order

    std::size_t block_size() const;
    // One past the highest regnum: the register numbers tracepoint actions may name.
    unsigned register_count() const;
    const RegisterInfo* find(std::string_view name) const;
    // The program counter: rip, pc or eip, whichever the description has.
    const RegisterInfo* pc() const;
};

// Scans <reg .../> elements (name, bitsize, optional regnum: default previous + 1) and the
// <architecture> element; everything else is skipped. Only the register block matters here,
// so this is a bounded scan, not an XML parser. Errors name the offset in `xml`.
Result<RegisterLayout> parse_register_layout(std::string_view xml);

// The register's bytes in `block`, or nothing if the block is too short to hold it.
std::optional<std::span<const std::uint8_t>> register_bytes(const RegisterInfo& reg,
                                                            std::span<const std::uint8_t> block);
// Little-endian value of a register of at most 8 bytes.
std::optional<std::uint64_t> register_value(const RegisterInfo& reg,
                                            std::span<const std::uint8_t> block);

} // namespace tpagent::tracefile
