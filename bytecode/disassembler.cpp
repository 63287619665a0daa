#include "bytecode/disassembler.hpp"
#include <fmt/format.h>

namespace tpagent::bytecode {

std::string disassemble(const Program& program) {
    return disassemble(program.bytes());
}

std::string disassemble(std::span<const std::uint8_t> bytes) {
    std::string text;
    std::size_t pos = 0;
    while (pos < bytes.size()) {
        const OpInfo& info = op_info(bytes[pos]);
        if (!info.name) {
            text += fmt::format("{:3}  (bad: unknown opcode 0x{:02x})\n", pos, bytes[pos]);
            break;
        }
        if (pos + 1 + info.operand_bytes > bytes.size()) {
            text += fmt::format("{:3}  (bad: truncated {})\n", pos, info.name);
            break;
        }
        std::uint64_t operand = 0;
        for (unsigned i = 0; i < info.operand_bytes; ++i)
            operand = operand << 8 | bytes[pos + 1 + i];
        if (bytes[pos] == static_cast<std::uint8_t>(Op::Printf)) {
            const unsigned nargs = bytes[pos + 1];
            const std::size_t slen = operand & 0xffff;
            if (slen == 0 || pos + 4 + slen > bytes.size()) {
                text += fmt::format("{:3}  (bad: truncated printf)\n", pos);
                break;
            }
            std::string_view s(reinterpret_cast<const char*>(&bytes[pos + 4]), slen - 1);
            text += fmt::format("{:3}  printf {} \"{}\"\n", pos, nargs, s);
            pos += 4 + slen;
            continue;
        }
        if (info.operand_bytes == 0)
            text += fmt::format("{:3}  {}\n", pos, info.name);
        else
            text += fmt::format("{:3}  {} {}\n", pos, info.name, operand);
        pos += 1 + info.operand_bytes;
    }
    return text;
}

} // namespace tpagent::bytecode
