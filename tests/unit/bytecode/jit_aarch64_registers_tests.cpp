// Registers the arm64 compiler backend's code must leave alone (built and run for arm64 only:
// the board's unit tests, under qemu user mode).
#include "arch/compiler_backend.hpp"
#include "ax_builder.hpp"
#include <cstring>

#if defined(__aarch64__)
using namespace tpagent;
using namespace tpagent::bytecode;
using namespace tpagent::bytecode::testing;

TEST_CASE("arm64 compiled code keeps its stack entries out of x28") {
    // A Go program keeps its goroutine in x28, and Go's signal handler reads it at whatever
    // instruction it interrupts, compiled conditions included: x28 is saved and restored by
    // the prologue and epilogue, and nothing between reads or writes it.
    Ax deep; // 12 entries deep: register reads, which are not folded
    for (unsigned i = 1; i <= 12; ++i)
        deep.reg(i % 8);
    for (int i = 1; i < 12; ++i)
        deep.op(Op::Add);
    deep.end();
    HelperAddresses helpers;
    helpers.read = 0x1000, helpers.reg = 0x2000, helpers.getv = 0x3000, helpers.setv = 0x4000;
    helpers.tracev = 0x5000, helpers.trace = 0x6000, helpers.tracenz = 0x7000;
    auto code = arch::host_compiler_backend().translate(must_validate(deep.b), helpers);
    REQUIRE(code.ok());
    unsigned pairs_with_x28 = 0;
    for (std::size_t at = 0; at + 4 <= code->size(); at += 4) {
        std::uint32_t insn = 0;
        std::memcpy(&insn, code->data() + at, 4);
        INFO(std::hex << "at +" << at << ": " << insn);
        CHECK((insn & 0xffe0ffff) != 0xaa0003fc); // mov x28, xm
        CHECK((insn & 0xffff03e0) != 0xaa1c03e0); // mov xd, x28
        if ((insn & 0xff800000) == 0xa9000000 && ((insn >> 10) & 31) == 28) {
            CHECK((insn & 0x3ff) == (31u << 5 | 27)); // stp/ldp x27, x28, [sp, #..]
            ++pairs_with_x28;
        }
    }
    CHECK(pairs_with_x28 >= 2); // saved once, restored at each way out
}
#endif
