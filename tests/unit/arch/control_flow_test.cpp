// Both ISAs' control-flow decoding (what the software branch recorder walks), from encodings
// checked with objdump.
#include "arch/aarch64/control_flow.hpp"
#include "arch/x86_64/control_flow.hpp"
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

using namespace tpagent;
using arch::FlowKind;

namespace {

arch::FlowInstruction x86(std::vector<std::uint8_t> code, std::uint64_t at = 0x1000) {
    auto r = arch::x86_64::decode_flow(code, at);
    REQUIRE(r);
    return *r;
}

arch::FlowInstruction a64(std::uint32_t insn, std::uint64_t at = 0x1000) {
    std::uint8_t code[4];
    for (int i = 0; i < 4; ++i)
        code[i] = static_cast<std::uint8_t>(insn >> (8 * i));
    auto r = arch::aarch64::decode_flow(code, at);
    REQUIRE(r);
    return *r;
}

} // namespace

TEST_CASE("x86-64: branches, their kinds and direct targets", "[arch][control_flow]") {
    auto mov = x86({0x48, 0x89, 0xe5}); // mov rbp, rsp
    CHECK(mov.length == 3);
    CHECK(mov.kind == FlowKind::Sequential);
    CHECK_FALSE(mov.target);

    auto jcc = x86({0x7e, 0x10}); // jle +0x10
    CHECK(jcc.kind == FlowKind::Conditional);
    CHECK(jcc.target == 0x1012);
    CHECK(x86({0x0f, 0x85, 0x00, 0x01, 0x00, 0x00}).target == 0x1106); // jne rel32
    CHECK(x86({0xe2, 0xfe}).kind == FlowKind::Conditional);            // loop .
    CHECK(x86({0xe3, 0x05}).kind == FlowKind::Conditional);            // jrcxz

    auto jmp = x86({0xeb, 0xfe}); // jmp .
    CHECK(jmp.kind == FlowKind::Jump);
    CHECK(jmp.target == 0x1000);
    auto indirect = x86({0xff, 0xe0}); // jmp rax
    CHECK(indirect.kind == FlowKind::Jump);
    CHECK_FALSE(indirect.target);

    auto call = x86({0xe8, 0xfb, 0xff, 0xff, 0xff}); // call 0x1000
    CHECK(call.kind == FlowKind::Call);
    CHECK(call.length == 5);
    CHECK(call.target == 0x1000);
    CHECK(x86({0xff, 0x15, 0, 0, 0, 0}).kind == FlowKind::Call); // call [rip]
    CHECK(x86({0xc3}).kind == FlowKind::Return);
    CHECK(x86({0xc2, 0x08, 0x00}).kind == FlowKind::Return); // ret 8
    CHECK(x86({0x0f, 0x05}).kind == FlowKind::System);       // syscall: where the kernel returns
    CHECK(x86({0xcc}).kind == FlowKind::System);             // int3
    CHECK_FALSE(arch::x86_64::decode_flow(std::vector<std::uint8_t>{0x0f}, 0x1000));
}

TEST_CASE("AArch64: branches, their kinds and direct targets", "[arch][control_flow]") {
    CHECK(a64(0xd503201f).kind == FlowKind::Sequential); // nop
    CHECK(a64(0xd503201f).length == 4);
    CHECK(a64(0x14000004).kind == FlowKind::Jump); // b +16
    CHECK(a64(0x14000004).target == 0x1010);
    CHECK(a64(0x17ffffff).target == 0xffc); // b -4
    CHECK(a64(0x94000002).kind == FlowKind::Call);
    CHECK(a64(0x94000002).target == 0x1008);
    auto bcond = a64(0x54000061); // b.ne +12
    CHECK(bcond.kind == FlowKind::Conditional);
    CHECK(bcond.target == 0x100c);
    CHECK(a64(0xb4ffffe0).target == 0xffc);  // cbz x0, -4
    CHECK(a64(0x37000080).target == 0x1010); // tbnz w0, #0, +16
    CHECK(a64(0x37000080).kind == FlowKind::Conditional);
    CHECK(a64(0xd61f0200).kind == FlowKind::Jump);   // br x16
    CHECK(a64(0xd63f0200).kind == FlowKind::Call);   // blr x16
    CHECK(a64(0xd65f03c0).kind == FlowKind::Return); // ret
    CHECK(a64(0xd4000001).kind == FlowKind::System); // svc #0
    CHECK_FALSE(a64(0xd65f03c0).target);
    CHECK_FALSE(arch::aarch64::decode_flow(std::vector<std::uint8_t>{0x1f, 0x20}, 0x1000));
}
