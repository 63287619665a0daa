#include "arch/register_access.hpp"
#include <algorithm>
#include <fmt/format.h>

namespace tpagent::arch {
namespace {

Result<RegisterDesc> find_register(const Architecture& arch, int regnum) {
    const auto regs = arch.registers();
    if (regnum < 0 || static_cast<std::size_t>(regnum) >= regs.size())
        return make_error(ErrorCode::NotFound, fmt::format("no register {}", regnum));
    return regs[regnum];
}

} // namespace

Result<std::vector<std::uint8_t>> read_register(const Architecture& arch, const RegisterSnapshot& s,
                                                int regnum) {
    auto desc = find_register(arch, regnum);
    if (!desc) return desc.error();
    std::vector<std::uint8_t> g(arch.g_size());
    std::vector<bool> available;
    arch.snapshot_to_g(s, g, available);
    if (!available[regnum])
        return make_error(ErrorCode::NotAllowed,
                          fmt::format("register {} is not available", desc->name));
    const auto first = g.begin() + desc->g_offset;
    return std::vector<std::uint8_t>(first, first + desc->size);
}

Status write_register(const Architecture& arch, RegisterSnapshot& s, int regnum,
                      std::span<const std::uint8_t> bytes) {
    auto desc = find_register(arch, regnum);
    if (!desc) return desc.error();
    if (bytes.size() != desc->size)
        return make_error(ErrorCode::BadPacket, fmt::format("register {} has {} bytes, got {}",
                                                            desc->name, desc->size, bytes.size()));
    // Round-trip the whole block so the other registers keep their values.
    std::vector<std::uint8_t> g(arch.g_size());
    std::vector<bool> available;
    arch.snapshot_to_g(s, g, available);
    std::copy(bytes.begin(), bytes.end(), g.begin() + desc->g_offset);
    arch.g_to_snapshot(g, s);
    return ok_status();
}

} // namespace tpagent::arch
