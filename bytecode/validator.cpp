// validate(): a linear decode (finds instruction boundaries and checks operands), then an
// abstract interpretation of the stack depth along every path from the first instruction.
#include "bytecode/program.hpp"
#include <algorithm>
#include <fmt/format.h>

namespace tpagent::bytecode {
namespace {

std::uint64_t read_be(std::span<const std::uint8_t> b, std::size_t pos, unsigned n) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i)
        v = (v << 8) | b[pos + i];
    return v;
}

Error fail(std::size_t offset, std::string reason) {
    return make_error(ErrorCode::BadBytecode, fmt::format("offset {}: {}", offset, reason));
}

constexpr std::int32_t kNotAStart = -1;

} // namespace

Result<Program> validate(std::span<const std::uint8_t> bytes, unsigned register_count,
                         const Limits& limits) {
    const unsigned max_stack = std::min(limits.max_stack, kStackCeiling);
    if (bytes.empty()) return fail(0, "empty expression (no end)");
    if (bytes.size() > limits.max_length)
        return fail(0, fmt::format("expression is {} bytes, the limit is {}", bytes.size(),
                                   limits.max_length));

    Program prog;
    prog.bytes_.assign(bytes.begin(), bytes.end());
    prog.backward_jump_budget_ = limits.max_backward_jumps;
    std::vector<std::int32_t> start_index(bytes.size(), kNotAStart);

    // 1. Decode every instruction, reachable or not, so jump targets can be checked.
    for (std::size_t pos = 0; pos < bytes.size();) {
        const std::uint8_t byte = bytes[pos];
        const OpInfo& info = op_info(byte);
        if (!info.name) return fail(pos, fmt::format("unknown opcode 0x{:02x}", byte));
        if (!info.supported)
            return fail(pos, fmt::format("unsupported floating-point opcode {}", info.name));
        if (pos + 1 + info.operand_bytes > bytes.size())
            return fail(pos, fmt::format("truncated operand of {}", info.name));

        Insn insn;
        insn.op = static_cast<Op>(byte);
        insn.offset = static_cast<std::uint32_t>(pos);
        std::size_t length = 1 + info.operand_bytes;
        if (insn.op == Op::Printf) {
            const unsigned nargs = bytes[pos + 1];
            const std::size_t slen = read_be(bytes, pos + 2, 2);
            if (slen == 0) return fail(pos, "printf format has no terminating NUL");
            if (pos + 4 + slen > bytes.size()) return fail(pos, "truncated printf format");
            const auto* text = reinterpret_cast<const char*>(&bytes[pos + 4]);
            if (text[slen - 1] != '\0') return fail(pos, "printf format is not NUL-terminated");
            std::string_view fmt_text(text, slen - 1);
            if (fmt_text.find('\0') != std::string_view::npos)
                return fail(pos, "printf format contains a NUL byte");
            auto parsed = parse_printf_format(fmt_text);
            if (!parsed) return fail(pos, "printf: " + parsed.error().text);
            if (parsed->nargs != nargs)
                return fail(pos, fmt::format("printf format has {} conversions but {} arguments",
                                             parsed->nargs, nargs));
            insn.imm = prog.formats_.size();
            insn.target = nargs;
            prog.formats_.push_back(std::move(*parsed));
            length = 4 + slen;
        } else if (info.operand_bytes > 0) {
            insn.imm = read_be(bytes, pos + 1, info.operand_bytes);
        }
        if (insn.op == Op::Reg && insn.imm >= register_count)
            return fail(pos, fmt::format("register {} does not exist (the target has {})", insn.imm,
                                         register_count));
        start_index[pos] = static_cast<std::int32_t>(prog.insns_.size());
        prog.insns_.push_back(insn);
        pos += length;
    }

    // 2. Jumps must land on the first byte of an instruction.
    for (Insn& insn : prog.insns_) {
        if (insn.op != Op::Goto && insn.op != Op::IfGoto) continue;
        if (insn.imm >= bytes.size())
            return fail(insn.offset,
                        fmt::format("jump to offset {} is outside the expression", insn.imm));
        if (start_index[insn.imm] == kNotAStart)
            return fail(insn.offset,
                        fmt::format("jump to offset {} lands inside an instruction", insn.imm));
        insn.target = static_cast<std::uint32_t>(start_index[insn.imm]);
    }

    // 3. Stack depth on every path: each instruction must be entered with one depth.
    auto& insns = prog.insns_;
    std::vector<std::uint32_t> work{0};
    insns[0].reachable = true;
    insns[0].depth = 0;
    auto reach = [&](std::uint32_t to, unsigned depth, const Insn& from) -> Status {
        Insn& t = insns[to];
        if (!t.reachable) {
            t.reachable = true;
            t.depth = static_cast<std::uint16_t>(depth);
            work.push_back(to);
        } else if (t.depth != depth) {
            return fail(from.offset,
                        fmt::format("stack depth at offset {} differs between paths ({} and {})",
                                    t.offset, t.depth, depth));
        }
        return ok_status();
    };
    while (!work.empty()) {
        const std::uint32_t i = work.back();
        work.pop_back();
        const Insn& insn = insns[i];
        const OpInfo& info = op_info(insn.op);
        unsigned needs = info.pops;
        unsigned after = 0;
        if (insn.op == Op::Pick) {
            needs = static_cast<unsigned>(insn.imm) + 1;
        } else if (insn.op == Op::Printf) {
            needs = 2 + insn.target;
        }
        if (insn.depth < needs)
            return fail(insn.offset, fmt::format("stack underflow: {} needs {} entries, has {}",
                                                 info.name, needs, insn.depth));
        if (insn.op == Op::Pick) {
            after = insn.depth + 1u;
        } else {
            after = insn.depth - needs + info.pushes;
        }
        if (after > max_stack)
            return fail(insn.offset,
                        fmt::format("stack depth {} exceeds the limit {}", after, max_stack));
        prog.max_depth_ = std::max(prog.max_depth_, after);

        switch (insn.op) {
        case Op::Reg:
            prog.uses_registers_ = true;
            break;
        case Op::Trace:
        case Op::TraceQuick:
        case Op::Trace16:
        case Op::Tracenz:
        case Op::Tracev:
            prog.collects_ = true;
            break;
        default:
            break;
        }

        if (info.flow == Flow::Jump || info.flow == Flow::CondJump) {
            if (auto st = reach(insn.target, after, insn); !st) return st.error();
        }
        if (info.flow == Flow::Next || info.flow == Flow::CondJump) {
            if (i + 1 >= insns.size())
                return fail(insn.offset, "execution runs past the last instruction (no end)");
            if (auto st = reach(i + 1, after, insn); !st) return st.error();
        }
    }
    return prog;
}

} // namespace tpagent::bytecode
