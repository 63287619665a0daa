// A printf format (printf_format.hpp) flattened into one block of plain bytes, with no
// pointers, so that it can be copied into a traced program and formatted there by code with no
// C library (the in-process agent's dprintf: rt::printf_flat). The conversions render as C's
// snprintf renders the parsed spec; tests/unit/bytecode/printf_flat_test.cpp compares them.
#pragma once
#include "bytecode/printf_format.hpp"
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpagent::bytecode {

enum FlatFlag : std::uint8_t {
    kFlagMinus = 1, // left-justified
    kFlagPlus = 2,  // a sign always (signed conversions)
    kFlagSpace = 4, // a space where no sign is printed (signed conversions)
    kFlagHash = 8,  // o: a leading 0; x X: 0x or 0X before a value other than 0
    kFlagZero = 16, // padded with zeros (integers without a precision)
};

struct FlatPiece {
    std::uint32_t literal_offset; // from the FlatFormat's start
    std::uint32_t literal_size;
    ArgKind kind;
    std::uint8_t has_arg;
    std::uint8_t arg_bits;
    char conv; // d i u o x X c s p
    std::uint8_t flags;
    std::uint8_t reserved[3];
    std::int32_t width;     // -1: none
    std::int32_t precision; // -1: none
};
static_assert(sizeof(FlatPiece) == 24);

// Followed by piece_count FlatPieces, then the literals' bytes; `size` bytes in all.
struct FlatFormat {
    std::uint32_t piece_count;
    std::uint32_t size;
};

inline const FlatPiece* flat_pieces(const FlatFormat* format) {
    return reinterpret_cast<const FlatPiece*>(format + 1);
}
inline const char* flat_literal(const FlatFormat* format, const FlatPiece& piece) {
    return reinterpret_cast<const char*>(format) + piece.literal_offset;
}

// The block for `format` (8-byte aligned wherever it is copied to).
std::vector<std::uint8_t> flatten(const PrintfFormat& format);

// Where formatted text goes: at most `cap` bytes, the rest dropped as rt::printf drops it.
struct FlatOutput {
    char* text;
    std::size_t cap;
    std::size_t used = 0;

    void put(char c) {
        if (used < cap) text[used++] = c;
    }
    void put(const char* s, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            put(s[i]);
    }
    void pad(char c, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            put(c);
    }
};

// `s` (`len` bytes, already cut to the precision) in its field, as %s and %c print.
inline void render_text(const FlatPiece& piece, const char* s, std::size_t len, FlatOutput& out) {
    const std::size_t width = piece.width > 0 ? static_cast<std::size_t>(piece.width) : 0;
    const std::size_t fill = width > len ? width - len : 0;
    if (!(piece.flags & kFlagMinus)) out.pad(' ', fill);
    out.put(s, len);
    if (piece.flags & kFlagMinus) out.pad(' ', fill);
}

// An integer, character or pointer conversion of `value` (a stack entry), as snprintf prints
// the piece's spec.
inline void render_number(const FlatPiece& piece, std::uint64_t value, FlatOutput& out) {
    if (piece.kind == ArgKind::Char) {
        const char c = static_cast<char>(value);
        render_text(piece, &c, 1, out);
        return;
    }
    if (piece.kind == ArgKind::Pointer && value == 0) {
        render_text(piece, "(nil)", 5, out);
        return;
    }
    const unsigned bits = piece.kind == ArgKind::Pointer ? 64 : piece.arg_bits;
    const std::uint64_t mask = bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
    std::uint64_t magnitude = value & mask;
    char sign = 0;
    if (piece.kind == ArgKind::Signed) {
        const std::uint64_t top = std::uint64_t{1} << (bits - 1);
        if (magnitude & top) {
            sign = '-';
            magnitude = (~magnitude + 1) & mask;
        } else if (piece.flags & kFlagPlus) {
            sign = '+';
        } else if (piece.flags & kFlagSpace) {
            sign = ' ';
        }
    } else if (piece.kind == ArgKind::Pointer) {
        if (piece.flags & kFlagPlus)
            sign = '+';
        else if (piece.flags & kFlagSpace)
            sign = ' ';
    }
    const unsigned base = piece.conv == 'o' ? 8
                          : piece.conv == 'x' || piece.conv == 'X' || piece.kind == ArgKind::Pointer
                              ? 16
                              : 10;
    const char* digit_set = piece.conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    char digits[24];
    std::size_t n = 0;
    if (base == 10) { // (a constant divisor: a multiplication, not a division)
        for (std::uint64_t v = magnitude; v != 0; v /= 10)
            digits[n++] = static_cast<char>('0' + v % 10);
    } else {
        const unsigned shift = base == 16 ? 4 : 3;
        for (std::uint64_t v = magnitude; v != 0; v >>= shift)
            digits[n++] = digit_set[v & (base - 1)];
    }
    // The precision is the fewest digits; 0 of a zero value prints none.
    std::size_t least = piece.precision >= 0 ? static_cast<std::size_t>(piece.precision) : 1;
    if (piece.conv == 'o' && (piece.flags & kFlagHash) && least <= n) least = n + 1;
    const std::size_t zeros = least > n ? least - n : 0;
    const char* prefix = "";
    if (piece.kind == ArgKind::Pointer || ((piece.flags & kFlagHash) && magnitude != 0)) {
        if (piece.conv == 'x' || piece.kind == ArgKind::Pointer)
            prefix = "0x";
        else if (piece.conv == 'X')
            prefix = "0X";
    }
    const std::size_t prefix_len = prefix[0] ? 2 : 0;
    const std::size_t body = (sign ? 1 : 0) + prefix_len + zeros + n;
    const std::size_t width = piece.width > 0 ? static_cast<std::size_t>(piece.width) : 0;
    const std::size_t fill = width > body ? width - body : 0;
    const bool left = piece.flags & kFlagMinus;
    const bool zero_fill = !left && (piece.flags & kFlagZero) && piece.precision < 0;
    if (!left && !zero_fill) out.pad(' ', fill);
    if (sign) out.put(sign);
    out.put(prefix, prefix_len);
    if (zero_fill) out.pad('0', fill);
    out.pad('0', zeros);
    while (n > 0)
        out.put(digits[--n]);
    if (left) out.pad(' ', fill);
}

} // namespace tpagent::bytecode
