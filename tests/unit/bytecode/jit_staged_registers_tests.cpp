// Code compiled with a StagedRegisterLayout, as tpagent compiles it for the in-process agent:
// `reg` of a staged register is a load from the block Context::registers points to, which
// must give what the reg helper gives; every other register still goes through the helper.
// Built for both architectures (the arm64 one runs under qemu user mode).
#include "arch/compiler_backend.hpp"
#include "ax_builder.hpp"
#include "ax_vectors.hpp"
#include "bytecode/runtime.hpp"
#include "random_program.hpp"
#include "random_target.hpp"
#include "relocated_code.hpp"
#include <algorithm>
#include <cstring>
#include <random>

using namespace tpagent;
using namespace tpagent::bytecode;
using namespace tpagent::bytecode::testing;

namespace {

unsigned reg_calls = 0;
rt::HelperResult counted_reg(const Context* c, EvalOut* out, std::uint64_t a, std::uint64_t b) {
    ++reg_calls;
    return rt::reg(c, out, a, b);
}

// Registers 0 to 7 staged as a pad stages them, of 8, 4, 2 and 1 bytes, one (4) not staged
// (size 0); the rest, past the layout, only through the helper.
StagedRegisterLayout test_layout() {
    StagedRegisterLayout layout(8);
    const std::uint8_t sizes[8] = {8, 8, 4, 8, 0, 2, 1, 8};
    for (unsigned n = 0; n < 8; ++n)
        layout[n] = {24 * n + 16, sizes[n]}; // garbage between them
    return layout;
}

// `t` with each staged register given a value cut to its size (a staged register is the
// pad's bytes, zero-extended), and the block holding them.
std::vector<std::uint8_t> stage(FakeTarget& t, const StagedRegisterLayout& layout) {
    std::vector<std::uint8_t> block(24 * layout.size() + 16, 0xa5);
    for (unsigned n = 0; n < layout.size(); ++n) {
        const auto [offset, size] = layout[n];
        if (size == 0) continue;
        std::uint64_t& v =
            t.registers.try_emplace(n, 0x1122334455667788ull * (n + 1)).first->second;
        if (size < 8) v &= (1ull << (8 * size)) - 1;
        std::memcpy(&block[offset], &v, size);
    }
    return block;
}

// Compiled with the layout and run on t's staged block (with and without the direct window):
// the interpreter's outcome, which it returns.
Outcome check_staged(const Program& p, FakeTarget t) {
    const StagedRegisterLayout layout = test_layout();
    const std::vector<std::uint8_t> block = stage(t, layout);
    HelperAddresses helpers = host_helper_addresses();
    helpers.reg = reinterpret_cast<std::uintptr_t>(&counted_reg);
    auto code = arch::host_compiler_backend().translate(p, helpers, layout);
    INFO((code ? std::string() : code.error().text));
    REQUIRE(code.ok());
    const Relocated mapped(*code, 0);
    Outcome reference = interpret(p, t);
    CHECK(mapped.run(t, false, block.data()) == reference);
    CHECK(mapped.run(t, true, block.data()) == reference);
    return reference;
}

} // namespace

TEST_CASE("staged registers: each size is a load, other registers the helper") {
    const StagedRegisterLayout layout = test_layout();
    for (unsigned n = 0; n < 10; ++n) {
        CAPTURE(n);
        FakeTarget t;
        t.registers[4] = 44; // not staged: the helper reads it
        t.registers[8] = 88;
        t.registers[9] = 99;
        reg_calls = 0;
        CHECK(check_staged(must_validate(Ax().reg(n).end().b), t).status == EvalStatus::Ok);
        const bool staged = n < layout.size() && layout[n].size != 0;
        CHECK(reg_calls == (staged ? 0u : 2u));
    }
    // A register nobody has: the helper's error, as interpreted.
    CHECK(check_staged(must_validate(Ax().reg(12).end().b), FakeTarget{}).status ==
          EvalStatus::RegisterError);
}

TEST_CASE("staged registers: random programs and gdb's vectors run as interpreted") {
    PrngChooser chooser{std::mt19937_64(20261130)};
    RandomProgram<PrngChooser> gen(chooser);
    Limits limits;
    limits.max_backward_jumps = 50;
    unsigned reads = 0;
    for (int i = 0; i < 400; ++i) {
        const std::vector<std::uint8_t> bytes = gen.make();
        CAPTURE(i);
        const Program p = must_validate(bytes, limits);
        reads += static_cast<unsigned>(std::ranges::count_if(
            p.insns(), [](const Insn& insn) { return insn.reachable && insn.op == Op::Reg; }));
        check_staged(p, random_target(chooser));
    }
    CHECK(reads > 100);
    const FakeTarget image = load_vector_image();
    for (const Vector& v : load_vectors()) {
        CAPTURE(v.expr);
        check_staged(must_validate(v.bytes), image);
    }
}
