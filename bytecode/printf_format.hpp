// The format string of the printf opcode, parsed once by the validator (dprintf with
// `set dprintf-style agent`). gdb sends the text as written in C source, escapes included.
#pragma once
#include "base/result.hpp"
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tpagent::bytecode {

// How one conversion turns a 64-bit stack value into text.
enum class ArgKind : std::uint8_t {
    Signed,   // d i: value sign-extended from arg_bits
    Unsigned, // u o x X: value zero-extended from arg_bits
    Char,     // c
    String,   // s: value is the address of a NUL-terminated string in target memory
    Pointer,  // p
};

struct FormatPiece {
    std::string literal; // text printed before the conversion (escapes already resolved)
    std::string spec;    // a safe snprintf spec: "%[flags][width][.prec]ll<conv>" (or %c %s %p)
    ArgKind kind = ArgKind::Signed;
    std::uint8_t arg_bits = 32; // from the length modifier: hh 8, h 16, none 32, l/ll/z/j/t 64
    bool has_arg = false;       // false only for the trailing literal-only piece
    int precision = -1;         // for %s: most bytes to read
};

struct PrintfFormat {
    std::vector<FormatPiece> pieces;
    unsigned nargs = 0;
    std::string source; // the format text as gdb sent it (for the disassembler)
};

// Largest field width or precision accepted, and the output bound of one printf.
inline constexpr int kMaxPrintfField = 512;
inline constexpr std::size_t kMaxPrintfOutput = 1024;
inline constexpr std::size_t kMaxPrintfString = 512; // bytes of a %s argument read from memory

// Parses `text` (without its terminating NUL). The error text says what is wrong.
Result<PrintfFormat> parse_printf_format(std::string_view text);

} // namespace tpagent::bytecode
