// Opcode semantics, checked through the interpreter and the compiler at once (run_all
// requires both to agree, with and without the direct-load window).
#include "ax_builder.hpp"
#include "arch/compiler_backend.hpp"
#include <limits>

using namespace tpagent::bytecode;
using namespace tpagent::bytecode::testing;

namespace {
constexpr std::uint64_t kMin = 0x8000000000000000ull;
constexpr std::uint64_t kAll = ~0ull;

// a OP b with both operands as constants, then again with b loaded from memory so the
// compiler cannot fold it.
std::uint64_t binop(Op op, std::uint64_t a, std::uint64_t b) {
    const std::uint64_t folded = value_of(Ax().k(a).k(b).op(op).end().b);
    FakeTarget t;
    std::vector<std::uint8_t> mem(16);
    std::memcpy(mem.data(), &a, 8);
    std::memcpy(mem.data() + 8, &b, 8);
    t.map(0x1000, mem);
    const std::uint64_t loaded =
        value_of(Ax().k(0x1000).op(Op::Ref64).k(0x1008).op(Op::Ref64).op(op).end().b, t);
    const std::uint64_t mixed = value_of(Ax().k(0x1000).op(Op::Ref64).k(b).op(op).end().b, t);
    CHECK(folded == loaded);
    CHECK(folded == mixed);
    return loaded;
}
} // namespace

TEST_CASE("arithmetic wraps at 64 bits") {
    CHECK(binop(Op::Add, kAll, 2) == 1);
    CHECK(binop(Op::Sub, 1, 2) == kAll);
    CHECK(binop(Op::Mul, 0x100000000ull, 0x100000001ull) == 0x100000000ull);
    CHECK(binop(Op::Mul, kAll, 7) == static_cast<std::uint64_t>(-7));
}

TEST_CASE("signed and unsigned division and remainder") {
    const auto neg = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    CHECK(binop(Op::DivSigned, neg(-7), 2) == neg(-3));
    CHECK(binop(Op::RemSigned, neg(-7), 2) == neg(-1));
    CHECK(binop(Op::RemSigned, 7, 2) == 1);
    CHECK(binop(Op::RemSigned, neg(-8), 4) == 0);
    CHECK(binop(Op::DivSigned, neg(-9), 8) == neg(-1));
    CHECK(binop(Op::RemSigned, neg(-9), 8) == neg(-1));
    CHECK(binop(Op::DivSigned, 7, neg(-2)) == neg(-3));
    CHECK(binop(Op::RemSigned, 7, neg(-2)) == 1);
    CHECK(binop(Op::DivSigned, neg(-100), 7) == neg(-14));
    CHECK(binop(Op::RemSigned, neg(-100), 7) == neg(-2));
    CHECK(binop(Op::DivUnsigned, neg(-7), 2) == 0x7ffffffffffffffcull);
    CHECK(binop(Op::RemUnsigned, neg(-7), 2) == 1);
    CHECK(binop(Op::DivUnsigned, 100, 16) == 6);
    CHECK(binop(Op::RemUnsigned, 100, 16) == 4);
    CHECK(binop(Op::RemUnsigned, 100, 7) == 2);
    CHECK(binop(Op::DivSigned, 5, 1) == 5);
    CHECK(binop(Op::RemSigned, 5, 1) == 0);
    CHECK(binop(Op::DivUnsigned, kAll, kMin) == 1);
    CHECK(binop(Op::DivSigned, kMin, kMin) == 1);
    CHECK(binop(Op::DivSigned, neg(-5), 0x4000000000000000ull) == 0);
    // The one overflowing case: INT64_MIN / -1 wraps instead of trapping.
    CHECK(binop(Op::DivSigned, kMin, kAll) == kMin);
    CHECK(binop(Op::RemSigned, kMin, kAll) == 0);
    CHECK(binop(Op::DivSigned, 9, kAll) == neg(-9));
}

TEST_CASE("division by zero is an evaluation error at the dividing instruction") {
    for (Op op : {Op::DivSigned, Op::DivUnsigned, Op::RemSigned, Op::RemUnsigned}) {
        const Outcome folded = run_all(Ax().k(7).k(0).op(op).end().b, {});
        CHECK(folded.status == EvalStatus::DivideByZero);
        CHECK(folded.fault_offset == 4);
        FakeTarget t;
        t.map(0x1000, std::vector<std::uint8_t>(8, 0));
        const Outcome loaded = run_all(Ax().k(7).k(0x1000).op(Op::Ref64).op(op).end().b, t);
        CHECK(loaded.status == EvalStatus::DivideByZero);
        CHECK(loaded.fault_offset == 6);
    }
}

TEST_CASE("shifts, including counts of 64 and more") {
    CHECK(binop(Op::Lsh, 1, 63) == kMin);
    CHECK(binop(Op::Lsh, 1, 64) == 0);
    CHECK(binop(Op::Lsh, 1, 200) == 0);
    CHECK(binop(Op::RshUnsigned, kMin, 63) == 1);
    CHECK(binop(Op::RshUnsigned, kMin, 64) == 0);
    CHECK(binop(Op::RshSigned, kMin, 63) == kAll);
    CHECK(binop(Op::RshSigned, kMin, 64) == kAll);
    CHECK(binop(Op::RshSigned, 0x4000000000000000ull, 1000) == 0);
    CHECK(binop(Op::RshSigned, static_cast<std::uint64_t>(-16), 2) ==
          static_cast<std::uint64_t>(-4));
}

TEST_CASE("bitwise and logical operators") {
    CHECK(binop(Op::BitAnd, 0xf0f0, 0xff00) == 0xf000);
    CHECK(binop(Op::BitOr, 0xf0f0, 0x0f00) == 0xfff0);
    CHECK(binop(Op::BitXor, 0xf0f0, 0xffff) == 0x0f0f);
    CHECK(value_of(Ax().k(0).op(Op::BitNot).end().b) == kAll);
    CHECK(value_of(Ax().k(0).op(Op::LogNot).end().b) == 1);
    CHECK(value_of(Ax().k(5).op(Op::LogNot).end().b) == 0);
}

TEST_CASE("comparisons are signed or unsigned as named") {
    CHECK(binop(Op::Equal, 5, 5) == 1);
    CHECK(binop(Op::Equal, 5, 6) == 0);
    CHECK(binop(Op::LessSigned, kAll, 0) == 1);
    CHECK(binop(Op::LessUnsigned, kAll, 0) == 0);
    CHECK(binop(Op::LessSigned, 3, 3) == 0);
    CHECK(binop(Op::LessUnsigned, 2, 3) == 1);
}

TEST_CASE("ext and zero_ext") {
    CHECK(value_of(Ax().k(0x80).ext(8).end().b) == 0xffffffffffffff80ull);
    CHECK(value_of(Ax().k(0x7f).ext(8).end().b) == 0x7f);
    CHECK(value_of(Ax().k(0x8000).ext(16).end().b) == 0xffffffffffff8000ull);
    CHECK(value_of(Ax().k(0xfffffffe).ext(32).end().b) == static_cast<std::uint64_t>(-2));
    CHECK(value_of(Ax().k(0x1f).ext(5).end().b) == kAll);
    CHECK(value_of(Ax().k(0x10).ext(5).end().b) == static_cast<std::uint64_t>(-16));
    CHECK(value_of(Ax().k(kMin).ext(64).end().b) == kMin);
    CHECK(value_of(Ax().k(0x1234).ext(200).end().b) == 0x1234);
    CHECK(value_of(Ax().k(kAll).op1(Op::ZeroExt, 8).end().b) == 0xff);
    CHECK(value_of(Ax().k(kAll).op1(Op::ZeroExt, 5).end().b) == 0x1f);
    CHECK(value_of(Ax().k(kAll).op1(Op::ZeroExt, 32).end().b) == 0xffffffffull);
    CHECK(value_of(Ax().k(kAll).op1(Op::ZeroExt, 40).end().b) == 0xffffffffffull);
    CHECK(value_of(Ax().k(kAll).op1(Op::ZeroExt, 0).end().b) == 0);
    // Unfolded forms: the value comes from memory.
    FakeTarget t;
    t.map(0x1000, {0xf0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
    for (unsigned n : {0u, 1u, 5u, 8u, 16u, 31u, 32u, 33u, 40u, 63u, 64u, 99u}) {
        CAPTURE(n);
        const std::uint64_t v = 0xfffffffffffffff0ull;
        CHECK(value_of(Ax().k(0x1000).op(Op::Ref64).ext(n).end().b, t) ==
              value_of(Ax().k(v).ext(n).end().b));
        CHECK(value_of(Ax().k(0x1000).op(Op::Ref64).op1(Op::ZeroExt, n).end().b, t) ==
              value_of(Ax().k(v).op1(Op::ZeroExt, n).end().b));
    }
}

TEST_CASE("constants are big-endian and not sign-extended") {
    CHECK(value_of(Ax().op1(Op::Const8, 0xff).end().b) == 0xff);
    CHECK(value_of(Ax().op2(Op::Const16, 0x8001).end().b) == 0x8001);
    CHECK(value_of(Ax().op(Op::Const32).be(0x80000001, 4).end().b) == 0x80000001ull);
    CHECK(value_of(Ax().op(Op::Const64).be(0x0102030405060708ull, 8).end().b) ==
          0x0102030405060708ull);
}

TEST_CASE("refN reads little-endian, unaligned, zero-extended") {
    FakeTarget t;
    t.map(0x1001, {0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x11});
    CHECK(value_of(Ax().k(0x1001).op(Op::Ref8).end().b, t) == 0x88);
    CHECK(value_of(Ax().k(0x1001).op(Op::Ref16).end().b, t) == 0x9988);
    CHECK(value_of(Ax().k(0x1001).op(Op::Ref32).end().b, t) == 0xbbaa9988u);
    CHECK(value_of(Ax().k(0x1001).op(Op::Ref64).end().b, t) == 0xffeeddccbbaa9988ull);
    CHECK(value_of(Ax().k(0x1002).op(Op::Ref64).end().b, t) == 0x11ffeeddccbbaa99ull);
}

TEST_CASE("an unreadable address is an error result with the address") {
    FakeTarget t;
    t.map(0x1000, std::vector<std::uint8_t>(16, 1));
    const Outcome o = run_all(Ax().k(0x100c).op(Op::Ref64).end().b, t); // crosses the end
    CHECK(o.status == EvalStatus::MemoryError);
    CHECK(o.fault_address == 0x100c);
    CHECK(o.fault_offset == 3);
    const Outcome null = run_all(Ax().k(0).op(Op::Ref32).end().b, t);
    CHECK(null.status == EvalStatus::MemoryError);
    // No read callback at all: still an error, never a crash.
    const Program p = must_validate(Ax().k(0x1000).op(Op::Ref8).end().b);
    Context bare;
    EvalOut out;
    CHECK(run(p, bare, out) == EvalStatus::MemoryError);
    auto c = tpagent::arch::compile_for_host(p);
    REQUIRE(c.ok());
    CHECK(c->run(bare, out) == EvalStatus::MemoryError);
    CHECK(!c->evaluate(bare).ok());
    CHECK(c->evaluate(bare).error().code == tpagent::ErrorCode::MemoryAccess);
    CHECK(c->evaluate(bare).error().text == "offset 3 (ref8): memory unreadable at 0x1000");
}

TEST_CASE("stack manipulation") {
    CHECK(value_of(Ax().k(1).k(2).op(Op::Swap).op(Op::Sub).end().b) == 1);
    CHECK(value_of(Ax().k(3).op(Op::Dup).op(Op::Mul).end().b) == 9);
    CHECK(value_of(Ax().k(3).k(4).op(Op::Pop).end().b) == 3);
    CHECK(value_of(Ax().k(10).k(20).k(30).op1(Op::Pick, 2).end().b) == 10);
    CHECK(value_of(Ax().k(10).k(20).k(30).op1(Op::Pick, 0).end().b) == 30);
    // rot: a b c => c a b, so the stack reads (bottom to top) 30 10 20.
    CHECK(value_of(Ax().k(10).k(20).k(30).op(Op::Rot).end().b) == 20);
    CHECK(value_of(Ax().k(10).k(20).k(30).op(Op::Rot).op(Op::Pop).end().b) == 10);
    CHECK(value_of(Ax().k(10).k(20).k(30).op(Op::Rot).op(Op::Pop).op(Op::Pop).end().b) == 30);
    CHECK(value_of(Ax().end().b) == 0); // empty stack at end
    // The same with values the compiler cannot fold.
    FakeTarget t;
    t.map(0x1000, {10, 20, 30});
    const auto load = [](Ax& a, unsigned i) -> Ax& { return a.k(0x1000 + i).op(Op::Ref8); };
    Ax a;
    load(load(load(a, 0), 1), 2).op(Op::Rot).op(Op::Pop).op(Op::Swap).op(Op::Sub).end();
    CHECK(value_of(a.b, t) == static_cast<std::uint64_t>(-20)); // 30 10 20, 30 10, 10 30, 10-30
}

TEST_CASE("conditional and unconditional jumps") {
    // x ? 4 : 5 for x = 0 and 1
    for (std::uint64_t x : {0ull, 1ull}) {
        Ax a;
        a.k(x).go(Op::IfGoto, 10).k(5).go(Op::Goto, 12).k(4).end();
        CHECK(value_of(a.b) == (x ? 4 : 5));
    }
}

TEST_CASE("a loop stops at the backward-jump budget") {
    Limits limits;
    limits.max_backward_jumps = 5;
    // 0: const8 0   2: const8 1  4: add  5: dup  6: const8 100  8: less_unsigned  9: if_goto 2
    Ax counting;
    counting.k(0).k(1).op(Op::Add).op(Op::Dup).k(100).op(Op::LessUnsigned).go(Op::IfGoto, 2).end();
    const Outcome o = run_all(counting.b, {}, limits);
    CHECK(o.status == EvalStatus::StepLimit);
    CHECK(o.fault_offset == 9);
    Limits roomy;
    roomy.max_backward_jumps = 1000;
    CHECK(run_all(counting.b, {}, roomy).value == 100);
    Ax forever;
    forever.go(Op::Goto, 0).end();
    CHECK(run_all(forever.b, {}, limits).status == EvalStatus::StepLimit);
}

TEST_CASE("registers are read through the callback") {
    FakeTarget t;
    t.registers[0] = 0x1122334455667788ull;
    t.registers[17] = 0x246;
    CHECK(value_of(Ax().reg(0).end().b, t) == 0x1122334455667788ull);
    CHECK(value_of(Ax().reg(17).k(1).op(Op::Add).end().b, t) == 0x247);
    const Outcome missing = run_all(Ax().k(1).reg(5).op(Op::Add).end().b, t);
    CHECK(missing.status == EvalStatus::RegisterError);
    CHECK(missing.fault_address == 5);
    CHECK(missing.fault_offset == 2);
}

TEST_CASE("trace state variables: getv, setv, tracev") {
    FakeTarget t;
    t.tsvs[2] = 40;
    const Outcome o = run_all(Ax().op2(Op::Getv, 2).k(2).op(Op::Add).op2(Op::Setv, 2).end().b, t);
    CHECK(o.value == 42);
    CHECK(o.tsvs.at(2) == 42);
    const Outcome traced = run_all(Ax().op2(Op::Tracev, 2).end().b, t);
    CHECK(traced.value == 40);
    CHECK(traced.collected_tsvs == std::vector<std::pair<unsigned, std::int64_t>>{{2, 40}});
    CHECK(run_all(Ax().op2(Op::Getv, 9).end().b, t).status == EvalStatus::TsvError);
    CHECK(run_all(Ax().k(1).op2(Op::Setv, 9).end().b, t).status == EvalStatus::TsvError);
}

TEST_CASE("trace opcodes collect ranges") {
    FakeTarget t;
    t.map(0x2000, {'h', 'i', 0, 'x', 'y'});
    const Outcome o = run_all(Ax().k(0x2000)
                                  .op1(Op::TraceQuick, 4)
                                  .op2(Op::Trace16, 300)
                                  .k(5)
                                  .op(Op::Trace)
                                  .k(0x2000)
                                  .k(100)
                                  .op(Op::Tracenz)
                                  .k(0x2003)
                                  .k(2)
                                  .op(Op::Tracenz)
                                  .end()
                                  .b,
                              t);
    REQUIRE(o.status == EvalStatus::Ok);
    const std::vector<std::pair<std::uint64_t, std::uint64_t>> want = {
        {0x2000, 4}, {0x2000, 300}, {0x2000, 5}, {0x2000, 3}, {0x2003, 2}};
    CHECK(o.collected == want);
    t.refuse_collection = true;
    const Outcome refused = run_all(Ax().k(0x2000).k(5).op(Op::Trace).end().b, t);
    CHECK(refused.status == EvalStatus::CollectError);
    CHECK(refused.fault_address == 0x2000);
    // tracenz running into unreadable memory before the NUL
    t.refuse_collection = false;
    const Outcome unterminated = run_all(Ax().k(0x2003).k(100).op(Op::Tracenz).end().b, t);
    CHECK(unterminated.status == EvalStatus::MemoryError);
}

TEST_CASE("printf formats its arguments in order and reads %s from memory") {
    FakeTarget t;
    t.map(0x3000, {'w', 'o', 'r', 'l', 'd', 0});
    // gdb pushes the arguments last-to-first, then channel and function.
    Ax a;
    a.k(0x3000)
        .k(static_cast<std::uint8_t>(-5))
        .ext(8)
        .k(0)
        .k(0)
        .printf(2, "%ld hello %s\\n")
        .k(7)
        .end();
    const Outcome o = run_all(a.b, t);
    REQUIRE(o.status == EvalStatus::Ok);
    CHECK(o.printed == "-5 hello world\n");
    CHECK(o.value == 7);
    Ax b;
    b.k(0x41).k(0xffff).k(0x1ff).k(0).k(0).printf(3, "[%hhd|%5x|%c]%%");
    b.end();
    CHECK(run_all(b.b, t).printed == "[-1| ffff|A]%");
}

TEST_CASE("deep stacks spill past the register homes") {
    Ax a;
    for (unsigned i = 1; i <= 40; ++i)
        a.k(i);
    for (unsigned i = 1; i < 40; ++i)
        a.op(Op::Add);
    a.end();
    CHECK(value_of(a.b) == 40 * 41 / 2);
    FakeTarget t;
    t.map(0x1000, std::vector<std::uint8_t>(64, 3));
    Ax m;
    for (unsigned i = 0; i < 30; ++i)
        m.k(0x1000 + i).op(Op::Ref8);
    for (unsigned i = 1; i < 30; ++i)
        m.op(i % 2 ? Op::Add : Op::Mul);
    m.end();
    const Program p = must_validate(m.b);
    CHECK(p.max_depth() == 30);
    run_all(m.b, t);
}

TEST_CASE("fused forms: remainder tests and sign-extending loads") {
    FakeTarget t;
    // int values at 0x1000.. : 7, -8, -7, 16, INT_MIN
    const std::int32_t values[] = {7, -8, -7, 16, INT32_MIN};
    std::vector<std::uint8_t> mem(sizeof values);
    std::memcpy(mem.data(), values, sizeof values);
    t.map(0x1000, mem);
    // The value of `ref32 addr`, then `rest`, then end.
    const auto after_load = [&](std::uint64_t addr, const Ax& rest) {
        Ax a;
        a.k(addr).op(Op::Ref32).b.insert(a.b.end(), rest.b.begin(), rest.b.end());
        return value_of(a.end().b, t);
    };
    for (unsigned i = 0; i < 5; ++i) {
        const std::int64_t v = values[i];
        CAPTURE(v);
        const std::uint64_t addr = 0x1000 + 4 * i;
        // gdb's `x % 2 == 0`
        CHECK(after_load(addr, Ax().ext(32).k(2).op(Op::RemSigned).ext(32).k(0).op(Op::Equal)) ==
              (v % 2 == 0));
        // without the ext, with a wider power of two, unsigned
        CHECK(after_load(addr, Ax().ext(32).k(8).op(Op::RemSigned).k(0).op(Op::Equal)) ==
              (v % 8 == 0));
        CHECK(after_load(addr,
                         Ax().k(4).op(Op::RemUnsigned).op1(Op::ZeroExt, 32).k(0).op(Op::Equal)) ==
              (static_cast<std::uint32_t>(v) % 4 == 0));
        // compared with something else than 0: not fused, still right
        CHECK(after_load(addr, Ax().ext(32).k(2).op(Op::RemSigned).ext(32).k(1).op(Op::Equal)) ==
              (v % 2 == 1));
        // sign-extending loads of each width
        CHECK(after_load(addr, Ax().ext(32)) == static_cast<std::uint64_t>(v));
        CHECK(value_of(Ax().k(addr).op(Op::Ref16).ext(16).end().b, t) ==
              static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int16_t>(v))));
        CHECK(value_of(Ax().k(addr).op(Op::Ref8).ext(8).end().b, t) ==
              static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int8_t>(v))));
    }
    // A jump onto the `const8 0` of the pattern keeps it apart: c ? x == 0 : x % 2 == 0.
    for (std::uint64_t c : {0u, 1u}) {
        const Ax rest =
            Ax().ext(32).k(c).go(Op::IfGoto, 14).k(2).op(Op::RemSigned).k(0).op(Op::Equal);
        CHECK(after_load(0x1004, rest) == (c ? 0 : 1)); // x is -8
    }
}
