// Direct-threaded dispatch (GCC's labels-as-values) over pre-decoded instructions, with the
// top of the stack cached in a register. The validator has proven every stack access in
// bounds and every jump target valid, so nothing here re-checks them.
#include "bytecode/interpreter.hpp"
#include "bytecode/runtime.hpp"
#include "bytecode/semantics.hpp"

namespace tpagent::bytecode {

EvalStatus run_insns(const Insn* insns, std::uint32_t backward_jump_budget,
                     const PrintfFormat* formats, const Context& c, EvalOut& out) {
    std::uint64_t stack[kStackCeiling + 1];
    std::uint64_t* sp = stack; // entries below the top; the top itself is in `top`
    std::uint64_t top = 0;
    const Insn* const base = insns;
    const Insn* ip = base;
    std::uint32_t budget = backward_jump_budget;
    rt::HelperResult r;

    // Indexed by opcode value; the validator lets only supported opcodes through.
    static const void* const kDispatch[] = {
        &&bad,       &&bad,       &&op_add,      &&op_sub,     &&op_mul,     // 00-04
        &&op_div_s,  &&op_div_u,  &&op_rem_s,    &&op_rem_u,   &&op_lsh,     // 05-09
        &&op_rsh_s,  &&op_rsh_u,  &&op_trace,    &&op_trace_q, &&op_log_not, // 0a-0e
        &&op_and,    &&op_or,     &&op_xor,      &&op_not,     &&op_equal,   // 0f-13
        &&op_less_s, &&op_less_u, &&op_ext,      &&op_ref8,    &&op_ref16,   // 14-18
        &&op_ref32,  &&op_ref64,  &&bad,         &&bad,        &&bad,        // 19-1d
        &&bad,       &&bad,       &&op_if_goto,  &&op_goto,    &&op_const,   // 1e-22
        &&op_const,  &&op_const,  &&op_const,    &&op_reg,     &&op_end,     // 23-27
        &&op_dup,    &&op_pop,    &&op_zero_ext, &&op_swap,    &&op_getv,    // 28-2c
        &&op_setv,   &&op_tracev, &&op_tracenz,  &&op_trace_q, &&bad,        // 2d-31
        &&op_pick,   &&op_rot,    &&op_printf,                               // 32-34
    };
    static_assert(sizeof kDispatch / sizeof kDispatch[0] == 0x35);

// NOLINTNEXTLINE(bugprone-macro-parentheses): a goto statement, not an expression
#define TP_DISPATCH() goto* kDispatch[static_cast<std::uint8_t>(ip->op)]
#define TP_NEXT()                                                                                  \
    do {                                                                                           \
        ++ip;                                                                                      \
        TP_DISPATCH();                                                                             \
    } while (0)
#define TP_FAIL(status)                                                                            \
    do {                                                                                           \
        out.fault_offset = ip->offset;                                                             \
        return status;                                                                             \
    } while (0)
#define TP_CALL(expr)                                                                              \
    r = (expr);                                                                                    \
    if (r.status) [[unlikely]]                                                                     \
    TP_FAIL(static_cast<EvalStatus>(r.status))
#define TP_BINARY(expr)                                                                            \
    do {                                                                                           \
        const std::uint64_t a = *--sp;                                                             \
        top = (expr);                                                                              \
        TP_NEXT();                                                                                 \
    } while (0)
#define TP_DIVIDE(fn)                                                                              \
    do {                                                                                           \
        if (top == 0) [[unlikely]] {                                                               \
            out.fault_address = 0;                                                                 \
            TP_FAIL(EvalStatus::DivideByZero);                                                     \
        }                                                                                          \
        TP_BINARY(fn(a, top));                                                                     \
    } while (0)
#define TP_JUMP()                                                                                  \
    do {                                                                                           \
        const Insn* to = base + ip->target;                                                        \
        if (to <= ip && budget-- == 0) [[unlikely]] {                                              \
            out.fault_address = 0;                                                                 \
            TP_FAIL(EvalStatus::StepLimit);                                                        \
        }                                                                                          \
        ip = to;                                                                                   \
        TP_DISPATCH();                                                                             \
    } while (0)
#define TP_PUSH(v)                                                                                 \
    do {                                                                                           \
        *sp++ = top;                                                                               \
        top = (v);                                                                                 \
    } while (0)

    TP_DISPATCH();

op_add:
    TP_BINARY(a + top);
op_sub:
    TP_BINARY(a - top);
op_mul:
    TP_BINARY(a * top);
op_div_s:
    TP_DIVIDE(sem::div_signed);
op_div_u:
    TP_DIVIDE(sem::div_unsigned);
op_rem_s:
    TP_DIVIDE(sem::rem_signed);
op_rem_u:
    TP_DIVIDE(sem::rem_unsigned);
op_lsh:
    TP_BINARY(sem::lsh(a, top));
op_rsh_s:
    TP_BINARY(sem::rsh_signed(a, top));
op_rsh_u:
    TP_BINARY(sem::rsh_unsigned(a, top));
op_and:
    TP_BINARY(a & top);
op_or:
    TP_BINARY(a | top);
op_xor:
    TP_BINARY(a ^ top);
op_equal:
    TP_BINARY(a == top);
op_less_s:
    TP_BINARY(sem::less_signed(a, top));
op_less_u:
    TP_BINARY(a < top);
op_log_not:
    top = top == 0;
    TP_NEXT();
op_not:
    top = ~top;
    TP_NEXT();
op_ext:
    top = sem::sign_extend(top, ip->imm);
    TP_NEXT();
op_zero_ext:
    top = sem::zero_extend(top, ip->imm);
    TP_NEXT();

#define TP_REF(size)                                                                               \
    do {                                                                                           \
        if (!rt::window_load(c, top, size, top)) {                                                 \
            TP_CALL(rt::read(&c, &out, top, size));                                                \
            top = r.value;                                                                         \
        }                                                                                          \
        TP_NEXT();                                                                                 \
    } while (0)
op_ref8:
    TP_REF(1);
op_ref16:
    TP_REF(2);
op_ref32:
    TP_REF(4);
op_ref64:
    TP_REF(8);

op_const:
    TP_PUSH(ip->imm);
    TP_NEXT();
op_dup:
    *sp++ = top;
    TP_NEXT();
op_pop:
    top = *--sp;
    TP_NEXT();
op_swap : {
    const std::uint64_t t = sp[-1];
    sp[-1] = top;
    top = t;
    TP_NEXT();
}
op_pick : {
    const std::uint64_t v = ip->imm == 0 ? top : sp[-static_cast<std::ptrdiff_t>(ip->imm)];
    TP_PUSH(v);
    TP_NEXT();
}
op_rot : { // a b c => c a b
    const std::uint64_t a = sp[-2], b = sp[-1];
    sp[-2] = top;
    sp[-1] = a;
    top = b;
    TP_NEXT();
}

op_if_goto : {
    const std::uint64_t cond = top;
    top = *--sp;
    if (cond != 0) TP_JUMP();
    TP_NEXT();
}
op_goto:
    TP_JUMP();

op_reg:
    TP_CALL(rt::reg(&c, &out, ip->imm, 0));
    TP_PUSH(r.value);
    TP_NEXT();
op_getv:
    TP_CALL(rt::getv(&c, &out, ip->imm, 0));
    TP_PUSH(r.value);
    TP_NEXT();
op_setv:
    TP_CALL(rt::setv(&c, &out, ip->imm, top));
    TP_NEXT();
op_tracev:
    TP_CALL(rt::tracev(&c, &out, ip->imm, 0));
    TP_PUSH(r.value);
    TP_NEXT();
op_trace: // addr size =>
    TP_CALL(rt::trace(&c, &out, sp[-1], top));
    sp -= 2;
    top = *sp;
    TP_NEXT();
op_tracenz:
    TP_CALL(rt::tracenz(&c, &out, sp[-1], top));
    sp -= 2;
    top = *sp;
    TP_NEXT();
op_trace_q: // trace_quick and trace16: addr => addr
    TP_CALL(rt::trace(&c, &out, top, ip->imm));
    TP_NEXT();
op_printf : {
    // Stack: ... arg(n-1) ... arg0 channel function(top). args[0] is the first argument.
    const unsigned nargs = ip->target;
    std::uint64_t args[kStackCeiling];
    for (unsigned i = 0; i < nargs; ++i)
        args[i] = sp[-2 - static_cast<int>(i)];
    if (!formats) [[unlikely]] {
        out.fault_address = 0;
        TP_FAIL(EvalStatus::PrintError);
    }
    TP_CALL(rt::printf(&c, &out, &formats[ip->imm], args));
    sp -= 2 + nargs;
    top = *sp;
    TP_NEXT();
}

op_end:
    out.value = ip->depth ? top : 0;
    return EvalStatus::Ok;

bad: // unsupported opcodes never pass the validator
    out.fault_address = 0;
    TP_FAIL(EvalStatus::StepLimit);

#undef TP_REF
#undef TP_PUSH
#undef TP_JUMP
#undef TP_DIVIDE
#undef TP_BINARY
#undef TP_CALL
#undef TP_FAIL
#undef TP_NEXT
#undef TP_DISPATCH
}

} // namespace tpagent::bytecode
