// Code translated for helpers at given addresses, copied to other mappings and run there: what
// a collector in the traced program does with code tpagent translates for it. The helpers
// here are counting wrappers around rt::, so the counts show the table is what gets called.
#include "ax_builder.hpp"
#include "arch/compiler_backend.hpp"
#include "ax_vectors.hpp"
#include "bytecode/runtime.hpp"
#include "random_program.hpp"
#include "random_target.hpp"
#include "relocated_code.hpp"
#include <Zydis/Zydis.h>
#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <random>

using namespace tpagent;
using namespace tpagent::bytecode;
using namespace tpagent::bytecode::testing;

namespace {

// In the order of HelperAddresses' fields.
enum Helper : unsigned { kRead, kReg, kGetv, kSetv, kTracev, kTrace, kTracenz, kPrintf, kHelpers };
std::array<unsigned, kHelpers> calls{};

template <Helper H, rt::HelperResult (*F)(const Context*, EvalOut*, std::uint64_t, std::uint64_t)>
rt::HelperResult counted(const Context* c, EvalOut* out, std::uint64_t a, std::uint64_t b) {
    ++calls[H];
    return F(c, out, a, b);
}
rt::HelperResult counted_printf(const Context* c, EvalOut* out, const PrintfFormat* format,
                                const std::uint64_t* args) {
    ++calls[kPrintf];
    return rt::printf(c, out, format, args);
}

template <typename F> std::uint64_t address_of(F* f) {
    return reinterpret_cast<std::uintptr_t>(f);
}

HelperAddresses wrappers(bool with_printf = true) {
    HelperAddresses h;
    h.read = address_of(&counted<kRead, &rt::read>);
    h.reg = address_of(&counted<kReg, &rt::reg>);
    h.getv = address_of(&counted<kGetv, &rt::getv>);
    h.setv = address_of(&counted<kSetv, &rt::setv>);
    h.tracev = address_of(&counted<kTracev, &rt::tracev>);
    h.trace = address_of(&counted<kTrace, &rt::trace>);
    h.tracenz = address_of(&counted<kTracenz, &rt::tracenz>);
    h.printf = with_printf ? address_of(&counted_printf) : 0;
    return h;
}

std::array<std::uint64_t, kHelpers> as_array(const HelperAddresses& h) {
    return {h.read, h.reg, h.getv, h.setv, h.tracev, h.trace, h.tracenz, h.printf};
}

std::vector<std::uint8_t> must_translate(const Program& p, const HelperAddresses& h) {
    auto code = tpagent::arch::host_compiler_backend().translate(p, h);
    INFO((code ? std::string() : code.error().text));
    REQUIRE(code.ok());
    return std::move(*code);
}

// Decodes all of `code` (it holds no data) and checks what makes it position-independent:
// no rip-relative or absolute memory operand, relative jumps only inside the code, and calls
// only through rax just loaded with one of `helpers`.
void check_position_independent(const std::vector<std::uint8_t>& code,
                                const HelperAddresses& helpers) {
    ZydisDecoder decoder;
    ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    const auto table = as_array(helpers);
    std::optional<std::uint64_t> rax; // the immediate the previous instruction put in rax
    for (std::size_t at = 0; at < code.size();) {
        CAPTURE(at);
        ZydisDecodedInstruction insn;
        ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
        REQUIRE(ZYAN_SUCCESS(
            ZydisDecoderDecodeFull(&decoder, &code[at], code.size() - at, &insn, ops)));
        for (unsigned k = 0; k < insn.operand_count; ++k) {
            const ZydisDecodedOperand& op = ops[k];
            if (op.type == ZYDIS_OPERAND_TYPE_MEMORY) {
                CHECK(op.mem.base != ZYDIS_REGISTER_RIP);
                CHECK(op.mem.base != ZYDIS_REGISTER_NONE);
            }
            if (op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op.imm.is_relative) {
                const std::int64_t target =
                    static_cast<std::int64_t>(at + insn.length) + op.imm.value.s;
                CHECK(target >= 0);
                CHECK(target < static_cast<std::int64_t>(code.size()));
            }
        }
        if (insn.mnemonic == ZYDIS_MNEMONIC_CALL) {
            CHECK(ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER);
            CHECK(ops[0].reg.value == ZYDIS_REGISTER_RAX);
            REQUIRE(rax);
            CHECK(std::find(table.begin(), table.end(), *rax) != table.end());
        }
        CHECK((insn.mnemonic != ZYDIS_MNEMONIC_JMP || ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE));
        const bool to_rax =
            insn.mnemonic == ZYDIS_MNEMONIC_MOV && ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
            (ops[0].reg.value == ZYDIS_REGISTER_RAX || ops[0].reg.value == ZYDIS_REGISTER_EAX) &&
            ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE;
        rax = to_rax ? std::optional<std::uint64_t>(ops[1].imm.value.u) : std::nullopt;
        at += insn.length;
    }
}

// Where the second copy of the code goes: far from the heap, the libraries and the first.
void* const kFarHint = reinterpret_cast<void*>(0x5a5a00000000ull);

// Translates `p` for the wrappers, runs the code from two other mappings, with and without
// the direct window, and requires the interpreter's outcome each time. Returns that outcome.
Outcome check_relocated(const Program& p, const FakeTarget& t) {
    const std::vector<std::uint8_t> code = must_translate(p, wrappers());
    check_position_independent(code, wrappers());
    const Relocated near(code, 0), far(code, 13, kFarHint);
    REQUIRE(near.address() != far.address());
    const Outcome reference = interpret(p, t);
    CHECK(interpret(p, t, true) == reference);
    CHECK(near.run(t, false) == reference);
    CHECK(near.run(t, true) == reference);
    CHECK(far.run(t, false) == reference);
    CHECK(far.run(t, true) == reference);
    return reference;
}

// Little-endian 64-bit immediates equal to `v` in `code`.
std::vector<std::size_t> occurrences(const std::vector<std::uint8_t>& code, std::uint64_t v) {
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i + 8 <= code.size(); ++i)
        if (std::memcmp(&code[i], &v, 8) == 0) at.push_back(i);
    return at;
}

} // namespace

TEST_CASE("relocatable code: the helper table is a parameter") {
    const HelperAddresses host = host_helper_addresses();
    CHECK(host.read == address_of(&rt::read));
    CHECK(host.printf == address_of(&rt::printf));
    for (std::uint64_t a : as_array(host))
        CHECK(a != 0);
    // The wrappers really are other functions, or the counts below would prove nothing.
    const auto w = as_array(wrappers()), h = as_array(host);
    for (unsigned i = 0; i < kHelpers; ++i)
        for (unsigned j = 0; j < kHelpers; ++j)
            CHECK(w[i] != h[j]);
}

TEST_CASE("relocatable code: each opcode calls its helper from the table") {
    FakeTarget t;
    t.map(0x1000, {'a', 'b', 0, 0, 0, 0, 0, 0});
    t.registers[3] = 0x33;
    t.tsvs[1] = 11;
    struct Case {
        Ax ax;
        Helper helper;
    };
    Ax read, reg, getv, setv, tracev, trace, quick, trace16, tracenz, print;
    read.k(0x1000).op(Op::Ref64).end();
    reg.reg(3).end();
    getv.op2(Op::Getv, 1).end();
    setv.k(5).op2(Op::Setv, 1).end();
    tracev.op2(Op::Tracev, 1).end();
    trace.k(0x1000).k(8).op(Op::Trace).k(0).end();
    quick.k(0x1000).op1(Op::TraceQuick, 4).end();
    trace16.k(0x1000).op2(Op::Trace16, 2).end();
    tracenz.k(0x1000).k(8).op(Op::Tracenz).k(0).end();
    print.k(0x1000).k(0).k(0).printf(1, "%s").k(0).end();
    const Case cases[] = {{read, kRead},       {reg, kReg},     {getv, kGetv},   {setv, kSetv},
                          {tracev, kTracev},   {trace, kTrace}, {quick, kTrace}, {trace16, kTrace},
                          {tracenz, kTracenz}, {print, kPrintf}};
    for (const Case& c : cases) {
        CAPTURE(c.helper);
        const Program p = must_validate(c.ax.b);
        calls = {};
        const Outcome o = check_relocated(p, t);
        CHECK(o.status == EvalStatus::Ok);
        // Two mappings, run without the window: once each. With the window, memory loads
        // stay inline; everything else still calls out.
        const unsigned want = c.helper == kRead ? 2 : 4;
        CHECK(calls[c.helper] == want);
        for (unsigned i = 0; i < kHelpers; ++i)
            if (i != c.helper && !(c.helper == kPrintf && i == kRead)) CHECK(calls[i] == 0);
    }
}

TEST_CASE("relocatable code: gdb's vectors run from other mappings as interpreted") {
    const FakeTarget image = load_vector_image();
    const auto vectors = load_vectors();
    REQUIRE(vectors.size() >= 100);
    calls = {};
    for (const Vector& v : vectors) {
        CAPTURE(v.expr);
        check_relocated(must_validate(v.bytes), image);
    }
    CHECK(calls[kRead] > 0);
    CHECK(calls[kReg] > 0);
    CHECK(calls[kTrace] > 0);
}

TEST_CASE("relocatable code: random programs run from other mappings as interpreted") {
    PrngChooser chooser{std::mt19937_64(20240923)};
    RandomProgram<PrngChooser> gen(chooser);
    Limits limits;
    limits.max_backward_jumps = 50;
    calls = {};
    unsigned ok = 0, failed = 0;
    for (int i = 0; i < 400; ++i) {
        const std::vector<std::uint8_t> bytes = gen.make();
        const FakeTarget target = random_target(chooser);
        CAPTURE(i, bytes.size());
        const Outcome o = check_relocated(must_validate(bytes, limits), target);
        (o.status == EvalStatus::Ok ? ok : failed)++;
    }
    INFO("ok " << ok << " failed " << failed);
    CHECK(ok > 50);
    CHECK(failed > 20);
    for (unsigned i = 0; i < kHelpers; ++i) {
        CAPTURE(i);
        CHECK(calls[i] > 0);
    }
}

TEST_CASE("relocatable code: the helper addresses are its only link to this process") {
    // Every helper-calling opcode, memory outside the window and a loop, but no printf.
    Ax a;
    a.reg(3).go(Op::IfGoto, 0);
    a.k(0x1000).op(Op::Ref32).reg(3).op(Op::Add);
    a.op2(Op::Getv, 1).op(Op::Add).op(Op::Dup).op2(Op::Setv, 1).op(Op::Pop);
    a.op2(Op::Tracev, 1).op(Op::Pop);
    a.k(0x1000).k(4).op(Op::Trace).k(0x1000).k(4).op(Op::Tracenz);
    a.k(0x1000).op1(Op::TraceQuick, 2).op(Op::Pop).end();
    const Program p = must_validate(a.b);
    const Program copy = p; // elsewhere in memory

    HelperAddresses x, y;
    x.read = 0x1111111111111101, y.read = 0x2222222222222201;
    x.reg = 0x1111111111111102, y.reg = 0x2222222222222202;
    x.getv = 0x1111111111111103, y.getv = 0x2222222222222203;
    x.setv = 0x1111111111111104, y.setv = 0x2222222222222204;
    x.tracev = 0x1111111111111105, y.tracev = 0x2222222222222205;
    x.trace = 0x1111111111111106, y.trace = 0x2222222222222206;
    x.tracenz = 0x1111111111111107, y.tracenz = 0x2222222222222207;
    x.printf = 0x1111111111111108, y.printf = 0x2222222222222208;
    const auto code_x = must_translate(p, x), code_y = must_translate(p, y);
    CHECK(must_translate(copy, x) == code_x); // nothing of the Program's own memory
    check_position_independent(code_x, x);

    // Replacing x's addresses by y's gives y's code: nothing else depends on them.
    REQUIRE(code_x.size() == code_y.size());
    std::vector<std::uint8_t> patched = code_x;
    const auto xs = as_array(x), ys = as_array(y);
    unsigned immediates = 0;
    for (unsigned i = 0; i < kHelpers; ++i) {
        const auto at = occurrences(code_x, xs[i]);
        CAPTURE(i);
        CHECK(at.size() == (i == kPrintf ? 0 : occurrences(code_y, ys[i]).size()));
        if (i != kPrintf) CHECK_FALSE(at.empty());
        for (std::size_t pos : at)
            std::memcpy(&patched[pos], &ys[i], 8), ++immediates;
    }
    CHECK(patched == code_y);
    CHECK(immediates >= 7);
    // None of this process's helpers is in there.
    for (std::uint64_t h : as_array(host_helper_addresses()))
        CHECK(occurrences(code_x, h).empty());
}

TEST_CASE("relocatable code: printf needs a printf helper") {
    FakeTarget t;
    t.map(0x1000, {'h', 'i', 0});
    Ax a;
    a.k(0x1000).k(0).k(0).printf(1, "%s").k(1).end();
    const Program p = must_validate(a.b);
    auto refused = tpagent::arch::host_compiler_backend().translate(p, wrappers(false));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::Unsupported);
    // With one it works (the code then points into p, which stays alive here).
    calls = {};
    const Outcome o = check_relocated(p, t);
    CHECK(o.printed == "hi");
    CHECK(calls[kPrintf] == 4);
    // A printf that no path reaches embeds nothing, so needs nothing.
    Ax b;
    b.k(7).end().k(0).k(0).printf(0, "never").end();
    auto unreachable =
        tpagent::arch::host_compiler_backend().translate(must_validate(b.b), wrappers(false));
    INFO((unreachable ? std::string() : unreachable.error().text));
    CHECK(unreachable.ok());
    // Programs without printf translate as before; the convenience overload uses this
    // process's helpers, printf included.
    CHECK(tpagent::arch::host_compiler_backend().translate(must_validate(Ax().k(1).end().b),
                                                           wrappers(false)));
    CHECK(tpagent::arch::host_compiler_backend().translate(p).ok());
    CHECK(tpagent::arch::compile_for_host(p).ok());
}
