// p/P-style single-register access through the g block.
#include "arch/register_access.hpp"
#include "arch/x86_64/architecture.hpp"
#include "arch/x86_64/cpu_features.hpp"
#include <catch2/catch.hpp>
#include <sys/user.h>

using namespace tpagent::arch;

TEST_CASE("register_access reads and writes one register and keeps the others") {
    x86_64::X86_64Architecture arch(x86_64::cpu_features_for_xcr0(0x7));
    RegisterSnapshot s;
    s.gpr.assign(sizeof(user_regs_struct), 0);
    s.xstate.assign(arch.layout().cpu().xstate_size, 0);
    arch.set_pc(s, 0x401234);

    const int rip = arch.pc_regnum();
    auto pc = read_register(arch, s, rip);
    REQUIRE(pc.ok());
    CHECK(*pc == std::vector<std::uint8_t>{0x34, 0x12, 0x40, 0, 0, 0, 0, 0});

    const int rax = arch.layout().find("rax");
    const std::vector<std::uint8_t> value = {1, 2, 3, 4, 5, 6, 7, 8};
    REQUIRE(write_register(arch, s, rax, value).ok());
    CHECK(*read_register(arch, s, rax) == value);
    CHECK(arch.pc(s) == 0x401234);

    CHECK(read_register(arch, s, 9999).error().code == tpagent::ErrorCode::NotFound);
    CHECK(write_register(arch, s, rax, std::vector<std::uint8_t>{1}).error().code ==
          tpagent::ErrorCode::BadPacket);

    RegisterSnapshot gpr_only;
    gpr_only.gpr = s.gpr;
    CHECK(read_register(arch, gpr_only, arch.layout().find("xmm0")).error().code ==
          tpagent::ErrorCode::NotAllowed);
}
