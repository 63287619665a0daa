#include "arch/x86_64/x87_tag.hpp"
#include "arch/x86_64/xsave_layout.hpp"
#include <cstring>

namespace tpagent::arch::x86_64 {
namespace {

enum Tag : std::uint16_t { kValid = 0, kZero = 1, kSpecial = 2, kEmpty = 3 };

// Classifies an 80-bit extended value the way the FPU would tag it.
Tag classify(const std::uint8_t* reg) {
    std::uint64_t mantissa = 0;
    std::uint16_t sign_exp = 0;
    std::memcpy(&mantissa, reg, 8);
    std::memcpy(&sign_exp, reg + 8, 2);
    const std::uint16_t exponent = sign_exp & 0x7fff;
    const bool integer_bit = mantissa >> 63;
    if (exponent == 0x7fff) return kSpecial;                    // infinity or NaN
    if (exponent == 0) return mantissa == 0 ? kZero : kSpecial; // zero or denormal
    return integer_bit ? kValid : kSpecial;                     // normal or unnormal
}

} // namespace

std::uint16_t full_x87_tag(std::span<const std::uint8_t> area) {
    const std::uint8_t abridged = area[fxsave::kFtw];
    const unsigned top = (area[fxsave::kFsw + 1] >> 3) & 7; // FSW bits 11-13
    std::uint16_t tag = 0;
    for (unsigned phys = 0; phys < 8; ++phys) {
        Tag t = kEmpty;
        if ((abridged >> phys) & 1) {
            // FXSAVE stores registers in stack order: physical register phys is st((phys-top)&7).
            const unsigned st = (phys + 8 - top) & 7;
            t = classify(area.data() + fxsave::kSt0 + st * fxsave::kStSlot);
        }
        tag |= static_cast<std::uint16_t>(t) << (2 * phys);
    }
    return tag;
}

std::uint8_t abridged_x87_tag(std::uint16_t full_tag) {
    std::uint8_t abridged = 0;
    for (unsigned phys = 0; phys < 8; ++phys) {
        if (((full_tag >> (2 * phys)) & 3) != kEmpty) abridged |= 1u << phys;
    }
    return abridged;
}

} // namespace tpagent::arch::x86_64
