// A SystemTap SDT marker's argument ("-4@%eax", "8@-16(%rbp)" in the marker's note): where its
// value is when a thread is at the marker, in gdb's register numbers, and how to fetch it.
//
// Freestanding (the in-process library evaluates these for fast static tracepoints): a plain
// record and a template over the caller's register and memory readers.
#pragma once
#include <cstdint>

namespace tpagent::arch {

struct SdtArgument {
    enum class Kind : std::uint8_t {
        Unknown,  // an operand tpagent cannot decode: the value is not collected
        Register, // the register `base`
        Memory,   // at base + index * scale + offset (a register -1: none)
        Constant, // offset
    };
    Kind kind = Kind::Unknown;
    std::uint8_t size = 8; // bytes: 1, 2, 4 or 8
    bool is_signed = false;
    std::uint8_t shift = 0; // Register: the value's lowest bit (x86-64 %ah..%dh: 8)
    std::int16_t base = -1;
    std::int16_t index = -1;
    std::uint8_t scale = 1;
    std::int64_t offset = 0;
};

// The argument's value, sign- or zero-extended from its size; false where a register or the
// memory cannot be read. read_register(int regnum, uint64_t* out) -> bool;
// read_memory(uint64_t address, void* out, unsigned size) -> bool.
template <class ReadRegister, class ReadMemory>
bool sdt_argument_value(const SdtArgument& a, ReadRegister&& read_register,
                        ReadMemory&& read_memory, std::uint64_t* out) {
    std::uint64_t raw = 0;
    switch (a.kind) {
    case SdtArgument::Kind::Register:
        if (!read_register(a.base, &raw)) return false;
        raw >>= a.shift;
        break;
    case SdtArgument::Kind::Memory: {
        std::uint64_t address = static_cast<std::uint64_t>(a.offset), r = 0;
        if (a.base >= 0) {
            if (!read_register(a.base, &r)) return false;
            address += r;
        }
        if (a.index >= 0) {
            if (!read_register(a.index, &r)) return false;
            address += r * a.scale;
        }
        if (a.size > 8 || !read_memory(address, &raw, a.size)) return false; // little-endian
        break;
    }
    case SdtArgument::Kind::Constant:
        raw = static_cast<std::uint64_t>(a.offset);
        break;
    default:
        return false;
    }
    if (a.size < 8) {
        const unsigned bits = 8u * a.size;
        raw &= (std::uint64_t{1} << bits) - 1;
        if (a.is_signed && (raw >> (bits - 1)) & 1) raw |= ~std::uint64_t{0} << bits;
    }
    *out = raw;
    return true;
}

} // namespace tpagent::arch
