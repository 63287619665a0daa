// gdb's answers to a stub's qRelocInsn request (GDB manual, "Relocate instruction reply packet").
#include "protocol/requests.hpp"
#include <catch2/catch.hpp>

using namespace tpagent;
using namespace tpagent::protocol;

TEST_CASE("qRelocInsn answers: which packets are answers", "[relocinsn]") {
    CHECK(is_reloc_insn_answer("qRelocInsn:6"));
    CHECK(is_reloc_insn_answer("E01"));
    CHECK_FALSE(is_reloc_insn_answer("M555555555000,6:8b0510000000"));
    CHECK_FALSE(is_reloc_insn_answer("X555555555000,0:"));
    CHECK_FALSE(is_reloc_insn_answer("qRelocInsn")); // no colon: not gdb's form
    CHECK_FALSE(is_reloc_insn_answer("qSupported:qRelocInsn+"));
}

TEST_CASE("qRelocInsn answers: the length, or gdb's refusal", "[relocinsn]") {
    auto len = parse_reloc_insn_answer("qRelocInsn:1a");
    REQUIRE(len.ok());
    REQUIRE(len->has_value());
    CHECK(**len == 0x1a);

    auto refused = parse_reloc_insn_answer("E01");
    REQUIRE(refused.ok());
    CHECK_FALSE(refused->has_value());

    for (const char* bad :
         {"qRelocInsn:", "qRelocInsn:xyz", "OK", "qRelocInsn:11111111111111111"}) {
        auto r = parse_reloc_insn_answer(bad);
        CHECK_FALSE(r.ok());
    }
}
