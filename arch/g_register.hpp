// One register's value out of a thread's registers in gdb's `g` layout, as agent expressions
// and tpagent's own lookups read them.
#pragma once
#include "arch/arch.hpp"
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

namespace tpagent::arch {

// Register `regnum`, zero-extended; nothing if it is unknown, unavailable or wider than 8
// bytes. (`g` is little-endian on both targets.)
inline std::optional<std::uint64_t> g_register(const Architecture& arch,
                                               std::span<const std::uint8_t> g,
                                               const std::vector<bool>& available,
                                               unsigned regnum) {
    const auto regs = arch.registers();
    if (regnum >= regs.size() || regs[regnum].size > 8 || regnum >= available.size() ||
        !available[regnum] || regs[regnum].g_offset + regs[regnum].size > g.size())
        return std::nullopt;
    std::uint64_t value = 0;
    std::memcpy(&value, g.data() + regs[regnum].g_offset, regs[regnum].size);
    return value;
}

} // namespace tpagent::arch
