#include "bytecode/printf_flat.hpp"
#include <cstring>

namespace tpagent::bytecode {

namespace {

// The spec's flags and width, read back ("%[flags][width][.prec]...": printf_format.cpp).
void read_spec(const std::string& spec, FlatPiece& piece) {
    std::size_t i = 1;
    for (; i < spec.size(); ++i) {
        const char c = spec[i];
        const std::uint8_t flag = c == '-'   ? kFlagMinus
                                  : c == '+' ? kFlagPlus
                                  : c == ' ' ? kFlagSpace
                                  : c == '#' ? kFlagHash
                                  : c == '0' ? kFlagZero
                                             : 0;
        if (!flag) break;
        piece.flags |= flag;
    }
    int width = -1;
    for (; i < spec.size() && spec[i] >= '0' && spec[i] <= '9'; ++i)
        width = (width < 0 ? 0 : width * 10) + (spec[i] - '0');
    piece.width = width;
    piece.conv = spec.empty() ? 'd' : spec.back();
}

} // namespace

std::vector<std::uint8_t> flatten(const PrintfFormat& format) {
    const std::size_t head = sizeof(FlatFormat) + format.pieces.size() * sizeof(FlatPiece);
    std::size_t literals = 0;
    for (const FormatPiece& p : format.pieces)
        literals += p.literal.size();
    std::vector<std::uint8_t> block((head + literals + 7) / 8 * 8, 0);
    FlatFormat f{static_cast<std::uint32_t>(format.pieces.size()),
                 static_cast<std::uint32_t>(block.size())};
    std::memcpy(block.data(), &f, sizeof f);
    std::size_t at = head;
    for (std::size_t i = 0; i < format.pieces.size(); ++i) {
        const FormatPiece& p = format.pieces[i];
        FlatPiece piece{};
        piece.literal_offset = static_cast<std::uint32_t>(at);
        piece.literal_size = static_cast<std::uint32_t>(p.literal.size());
        piece.kind = p.kind;
        piece.has_arg = p.has_arg ? 1 : 0;
        piece.arg_bits = p.arg_bits;
        piece.precision = p.precision;
        piece.width = -1;
        if (p.has_arg) read_spec(p.spec, piece);
        std::memcpy(block.data() + sizeof(FlatFormat) + i * sizeof(FlatPiece), &piece,
                    sizeof piece);
        std::memcpy(block.data() + at, p.literal.data(), p.literal.size());
        at += p.literal.size();
    }
    return block;
}

} // namespace tpagent::bytecode
