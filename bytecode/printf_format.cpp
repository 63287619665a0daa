#include "bytecode/printf_format.hpp"
#include <fmt/format.h>

namespace tpagent::bytecode {
namespace {

Error fail(std::string text) {
    return make_error(ErrorCode::BadBytecode, std::move(text));
}

// The escapes gdb's own printf accepts.
bool unescape(char c, char& out) {
    switch (c) {
    case '\\':
        out = '\\';
        return true;
    case 'a':
        out = '\a';
        return true;
    case 'b':
        out = '\b';
        return true;
    case 'e':
        out = '\x1b';
        return true;
    case 'f':
        out = '\f';
        return true;
    case 'n':
        out = '\n';
        return true;
    case 'r':
        out = '\r';
        return true;
    case 't':
        out = '\t';
        return true;
    case 'v':
        out = '\v';
        return true;
    case '"':
        out = '"';
        return true;
    case '\'':
        out = '\'';
        return true;
    default:
        return false;
    }
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

} // namespace

Result<PrintfFormat> parse_printf_format(std::string_view text) {
    PrintfFormat out;
    out.source = std::string(text);
    FormatPiece piece;
    std::size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (c == '\\') {
            char e = 0;
            if (i + 1 >= text.size() || !unescape(text[i + 1], e))
                return fail(fmt::format("unrecognized escape at byte {}", i));
            piece.literal += e;
            i += 2;
            continue;
        }
        if (c != '%') {
            piece.literal += c;
            ++i;
            continue;
        }
        if (i + 1 < text.size() && text[i + 1] == '%') {
            piece.literal += '%';
            i += 2;
            continue;
        }
        // %[flags][width][.precision][length]conversion
        const std::size_t start = i++;
        std::string flags;
        while (i < text.size() && std::string_view("-+ #0").find(text[i]) != std::string_view::npos)
            flags += text[i++];
        int width = -1, precision = -1;
        auto number = [&](int& v) -> bool {
            v = 0;
            while (i < text.size() && is_digit(text[i])) {
                v = v * 10 + (text[i++] - '0');
                if (v > kMaxPrintfField) return false;
            }
            return true;
        };
        if (i < text.size() && is_digit(text[i]) && !number(width))
            return fail(fmt::format("field width at byte {} is too large", start));
        if (i < text.size() && text[i] == '.') {
            ++i;
            if (!number(precision))
                return fail(fmt::format("precision at byte {} is too large", start));
        }
        if (i < text.size() && text[i] == '*')
            return fail(fmt::format("'*' width or precision at byte {} is not supported", start));
        unsigned bits = 32;
        if (text.substr(i, 2) == "hh") {
            bits = 8, i += 2;
        } else if (text.substr(i, 2) == "ll") {
            bits = 64, i += 2;
        } else if (i < text.size() &&
                   std::string_view("hlzjt").find(text[i]) != std::string_view::npos) {
            bits = text[i] == 'h' ? 16 : 64;
            ++i;
        }
        if (i >= text.size()) return fail(fmt::format("incomplete conversion at byte {}", start));
        const char conv = text[i++];
        std::string spec = "%" + flags;
        if (width >= 0) spec += std::to_string(width);
        if (precision >= 0) spec += "." + std::to_string(precision);
        switch (conv) {
        case 'd':
        case 'i':
            piece.kind = ArgKind::Signed, spec += "ll", spec += conv;
            break;
        case 'u':
        case 'o':
        case 'x':
        case 'X':
            piece.kind = ArgKind::Unsigned, spec += "ll", spec += conv;
            break;
        case 'c':
            piece.kind = ArgKind::Char, spec += 'c';
            break;
        case 's':
            piece.kind = ArgKind::String, spec += 's';
            break;
        case 'p':
            piece.kind = ArgKind::Pointer, spec += 'p';
            break;
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G':
        case 'a':
        case 'A':
            return fail(fmt::format("floating-point conversion %{} is not supported", conv));
        default:
            return fail(fmt::format("conversion %{} at byte {} is not supported", conv, start));
        }
        if ((conv == 'c' || conv == 's' || conv == 'p') && bits != 32)
            return fail(fmt::format("length modifier on %{} is not supported", conv));
        // Combinations C leaves undefined are refused rather than passed to snprintf.
        const bool integer = conv != 'c' && conv != 's' && conv != 'p';
        const bool alt_ok = conv == 'o' || conv == 'x' || conv == 'X';
        if ((flags.find('#') != std::string::npos && !alt_ok) ||
            (flags.find('0') != std::string::npos && !integer) ||
            (precision >= 0 && (conv == 'c' || conv == 'p')))
            return fail(
                fmt::format("flags or precision at byte {} do not apply to %{}", start, conv));
        piece.spec = std::move(spec);
        piece.arg_bits = static_cast<std::uint8_t>(bits);
        piece.precision = precision;
        piece.has_arg = true;
        out.pieces.push_back(std::move(piece));
        piece = FormatPiece{};
        ++out.nargs;
    }
    if (!piece.literal.empty()) out.pieces.push_back(std::move(piece));
    return out;
}

} // namespace tpagent::bytecode
