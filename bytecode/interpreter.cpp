// A switch over pre-decoded instructions. The validator has proven every stack access
// in bounds and every jump target valid, so nothing here re-checks them.
#include "bytecode/interpreter.hpp"
#include "bytecode/runtime.hpp"
#include "bytecode/semantics.hpp"

namespace tpagent::bytecode {

EvalStatus run(const Program& program, const Context& c, EvalOut& out) {
    std::uint64_t stack[kStackCeiling + 1];
    std::uint64_t* sp = stack; // one past the top entry
    const Insn* const base = program.insns().data();
    const Insn* ip = base;
    std::uint32_t budget = program.backward_jump_budget();
    rt::HelperResult r;

#define TP_CALL(expr)                                                                              \
    r = (expr);                                                                                    \
    if (r.status) [[unlikely]] {                                                                   \
        out.fault_offset = ip->offset;                                                             \
        return static_cast<EvalStatus>(r.status);                                                  \
    }

    for (;;) {
        switch (ip->op) {
        case Op::Add: sp[-2] += sp[-1], --sp; break;
        case Op::Sub: sp[-2] -= sp[-1], --sp; break;
        case Op::Mul: sp[-2] *= sp[-1], --sp; break;
        case Op::DivSigned:
        case Op::DivUnsigned:
        case Op::RemSigned:
        case Op::RemUnsigned: {
            const std::uint64_t b = sp[-1], a = sp[-2];
            if (b == 0) [[unlikely]] {
                out.fault_offset = ip->offset;
                out.fault_address = 0;
                return EvalStatus::DivideByZero;
            }
            sp[-2] = ip->op == Op::DivSigned     ? sem::div_signed(a, b)
                     : ip->op == Op::DivUnsigned ? a / b
                     : ip->op == Op::RemSigned   ? sem::rem_signed(a, b)
                                                 : a % b;
            --sp;
            break;
        }
        case Op::Lsh: sp[-2] = sem::lsh(sp[-2], sp[-1]), --sp; break;
        case Op::RshSigned: sp[-2] = sem::rsh_signed(sp[-2], sp[-1]), --sp; break;
        case Op::RshUnsigned: sp[-2] = sem::rsh_unsigned(sp[-2], sp[-1]), --sp; break;
        case Op::Trace:
            TP_CALL(rt::trace(&c, &out, sp[-2], sp[-1]));
            sp -= 2;
            break;
        case Op::TraceQuick:
        case Op::Trace16: TP_CALL(rt::trace(&c, &out, sp[-1], ip->imm)); break;
        case Op::Tracenz:
            TP_CALL(rt::tracenz(&c, &out, sp[-2], sp[-1]));
            sp -= 2;
            break;
        case Op::LogNot: sp[-1] = sp[-1] == 0; break;
        case Op::BitAnd: sp[-2] &= sp[-1], --sp; break;
        case Op::BitOr: sp[-2] |= sp[-1], --sp; break;
        case Op::BitXor: sp[-2] ^= sp[-1], --sp; break;
        case Op::BitNot: sp[-1] = ~sp[-1]; break;
        case Op::Equal: sp[-2] = sp[-2] == sp[-1], --sp; break;
        case Op::LessSigned: sp[-2] = sem::less_signed(sp[-2], sp[-1]), --sp; break;
        case Op::LessUnsigned: sp[-2] = sp[-2] < sp[-1], --sp; break;
        case Op::Ext: sp[-1] = sem::sign_extend(sp[-1], ip->imm); break;
        case Op::ZeroExt: sp[-1] = sem::zero_extend(sp[-1], ip->imm); break;
        case Op::Ref8:
        case Op::Ref16:
        case Op::Ref32:
        case Op::Ref64: {
            const unsigned size = ref_size(ip->op);
            if (!rt::window_load(c, sp[-1], size, sp[-1])) {
                TP_CALL(rt::read(&c, &out, sp[-1], size));
                sp[-1] = r.value;
            }
            break;
        }
        case Op::IfGoto:
            if (*--sp != 0) {
                const Insn* to = base + ip->target;
                if (to <= ip && budget-- == 0) [[unlikely]] {
                    out.fault_offset = ip->offset;
                    out.fault_address = 0;
                    return EvalStatus::StepLimit;
                }
                ip = to;
                continue;
            }
            break;
        case Op::Goto: {
            const Insn* to = base + ip->target;
            if (to <= ip && budget-- == 0) [[unlikely]] {
                out.fault_offset = ip->offset;
                out.fault_address = 0;
                return EvalStatus::StepLimit;
            }
            ip = to;
            continue;
        }
        case Op::Const8:
        case Op::Const16:
        case Op::Const32:
        case Op::Const64: *sp++ = ip->imm; break;
        case Op::Reg:
            TP_CALL(rt::reg(&c, &out, ip->imm, 0));
            *sp++ = r.value;
            break;
        case Op::End: out.value = sp == stack ? 0 : sp[-1]; return EvalStatus::Ok;
        case Op::Dup: *sp = sp[-1], ++sp; break;
        case Op::Pop: --sp; break;
        case Op::Swap: {
            const std::uint64_t t = sp[-1];
            sp[-1] = sp[-2];
            sp[-2] = t;
            break;
        }
        case Op::Getv:
            TP_CALL(rt::getv(&c, &out, ip->imm, 0));
            *sp++ = r.value;
            break;
        case Op::Setv: TP_CALL(rt::setv(&c, &out, ip->imm, sp[-1])); break;
        case Op::Tracev:
            TP_CALL(rt::tracev(&c, &out, ip->imm, 0));
            *sp++ = r.value;
            break;
        case Op::Pick: *sp = sp[-1 - static_cast<std::ptrdiff_t>(ip->imm)], ++sp; break;
        case Op::Rot: { // a b c => c a b
            const std::uint64_t a = sp[-3], b = sp[-2], cc = sp[-1];
            sp[-3] = cc, sp[-2] = a, sp[-1] = b;
            break;
        }
        case Op::Printf: {
            // Stack: ... arg(n-1) ... arg0 channel function. Arguments are copied so
            // args[0] is the first one.
            const unsigned nargs = ip->target;
            std::uint64_t args[kStackCeiling];
            for (unsigned i = 0; i < nargs; ++i) args[i] = sp[-3 - static_cast<int>(i)];
            TP_CALL(rt::printf(&c, &out, &program.formats()[ip->imm], args));
            sp -= 2 + nargs;
            break;
        }
        default: // unsupported opcodes never pass the validator
            out.fault_offset = ip->offset;
            return EvalStatus::StepLimit;
        }
        ++ip;
    }
#undef TP_CALL
}

Result<std::uint64_t> evaluate(const Program& program, const Context& context) {
    EvalOut out;
    const EvalStatus s = run(program, context, out);
    if (s != EvalStatus::Ok) return describe_failure(program, s, out);
    return out.value;
}

} // namespace tpagent::bytecode
