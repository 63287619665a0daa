// FXSAVE keeps an abridged tag (one "not empty" bit per physical x87 register); gdb shows the
// full 16-bit tag word (two bits each: valid, zero, special, empty), as FSTENV would.
#pragma once
#include <cstdint>
#include <span>

namespace tpagent::arch::x86_64 {

// `fxsave` is the 512-byte legacy area: abridged tag, status word (TOP) and st0-7.
std::uint16_t full_x87_tag(std::span<const std::uint8_t> fxsave);

// Any tag other than "empty" (11) marks the register as in use.
std::uint8_t abridged_x87_tag(std::uint16_t full_tag);

} // namespace tpagent::arch::x86_64
