// One register at a time (for `p` and `P`), through the architecture's `g` block.
#pragma once
#include "arch/arch.hpp"
#include "base/result.hpp"
#include <cstdint>
#include <span>
#include <vector>

namespace tpagent::arch {

// The register's bytes in target order; NotFound for a bad regnum, NotAllowed when the
// snapshot does not hold it (gdb shows it as unavailable).
Result<std::vector<std::uint8_t>> read_register(const Architecture& arch, const RegisterSnapshot& s,
                                                int regnum);

// Replaces one register; `bytes` must be exactly the register's size.
Status write_register(const Architecture& arch, RegisterSnapshot& s, int regnum,
                      std::span<const std::uint8_t> bytes);

} // namespace tpagent::arch
