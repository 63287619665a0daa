// bytecode::traced_range: gdb's code for collecting a variable in memory recognised as the one
// range it collects, and the interpreter collecting exactly that range from it; anything else
// left as an expression.
#include "bytecode/interpreter.hpp"
#include "bytecode/program.hpp"
#include "bytecode/traced_range.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <vector>

using namespace tpagent::bytecode;

namespace {

Program program(std::vector<std::uint8_t> bytes) {
    auto p = validate(bytes, 64);
    REQUIRE(p);
    return std::move(*p);
}

// What the interpreter collects from p with register r = value: the (address, length) pairs.
std::vector<std::pair<std::uint64_t, std::uint64_t>> collected(const Program& p,
                                                               std::uint64_t value) {
    struct User {
        std::uint64_t value;
        std::vector<std::pair<std::uint64_t, std::uint64_t>> got;
    } user{value, {}};
    Context ctx;
    ctx.user = &user;
    ctx.read_register = [](void* u, unsigned, std::uint64_t* v) {
        *v = static_cast<User*>(u)->value;
        return true;
    };
    ctx.collect_memory = [](void* u, std::uint64_t addr, std::uint64_t len) {
        static_cast<User*>(u)->got.emplace_back(addr, len);
        return true;
    };
    EvalOut out;
    REQUIRE(run_insns(p.insns().data(), 1000, nullptr, ctx, out) == EvalStatus::Ok);
    return user.got;
}

} // namespace

TEST_CASE("gdb's code for a variable in memory is the range it collects", "[bytecode]") {
    struct Case {
        std::vector<std::uint8_t> bytes;
        TracedRange range;
        std::uint64_t reg_value;
    };
    const std::vector<Case> cases = {
        // collect current (a global struct): const32 A; const8 16; trace; end
        {{0x24, 0x00, 0x40, 0x40, 0x20, 0x22, 0x10, 0x0c, 0x27}, {-1, 0x404020, 16}, 0},
        // a local at rbp - 20: reg 6; const8 0xec; ext 8; add; trace_quick 4; end
        {{0x26, 0x00, 0x06, 0x22, 0xec, 0x16, 0x08, 0x02, 0x0d, 0x04, 0x27},
         {6, static_cast<std::uint64_t>(-20), 4},
         0x7ffe0000},
        // at the register itself, the trace_quick's value popped: reg 7; trace_quick 8; pop; end
        {{0x26, 0x00, 0x07, 0x0d, 0x08, 0x29, 0x27}, {7, 0, 8}, 0x1000},
        // constant first: const16 0x100; reg 5; add; const8 32; trace; end
        {{0x23, 0x01, 0x00, 0x26, 0x00, 0x05, 0x02, 0x22, 0x20, 0x0c, 0x27}, {5, 0x100, 32}, 77},
    };
    for (const Case& c : cases) {
        const Program p = program(c.bytes);
        const auto range = traced_range(p);
        REQUIRE(range);
        REQUIRE(*range == c.range);
        // The interpreter collects what the range says.
        const std::uint64_t base = c.range.base_register < 0 ? 0 : c.reg_value;
        const auto got = collected(p, c.reg_value);
        REQUIRE(got.size() == 1);
        REQUIRE(got[0].first == base + c.range.offset);
        REQUIRE(got[0].second == c.range.length);
    }
}

TEST_CASE("an expression that does more than collect one range stays an expression", "[bytecode]") {
    const std::vector<std::vector<std::uint8_t>> programs = {
        // two ranges
        {0x22, 0x10, 0x0d, 0x04, 0x22, 0x20, 0x0d, 0x04, 0x27},
        // a dereference: collect *p (reg 5; ref64; trace_quick 8)
        {0x26, 0x00, 0x05, 0x1a, 0x0d, 0x08, 0x27},
        // a size from a register
        {0x22, 0x10, 0x26, 0x00, 0x05, 0x0c, 0x27},
        // two registers added
        {0x26, 0x00, 0x05, 0x26, 0x00, 0x06, 0x02, 0x0d, 0x04, 0x27},
        // a register sign-extended
        {0x26, 0x00, 0x05, 0x16, 0x20, 0x0d, 0x04, 0x27},
        // nothing collected
        {0x22, 0x10, 0x29, 0x27},
        // a condition's shape: reg 5; const8 0; less_signed; log_not; end
        {0x26, 0x00, 0x05, 0x22, 0x00, 0x14, 0x0e, 0x27},
    };
    for (const auto& bytes : programs) {
        INFO("program of " << bytes.size() << " bytes starting " << int(bytes[0]));
        REQUIRE_FALSE(traced_range(program(bytes)));
    }
}
