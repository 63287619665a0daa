// The arm64 registers as Unicorn names them, for the tests that run pads in it: a machine's
// x0..x30, sp, pc and NZCV read at once, and the traced code those tests patch.
#pragma once
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <unicorn/unicorn.h>
#include <vector>

namespace tpagent::test::unicorn_a64 {

// adds x0, x0, x1; ldr x2, <code+0x800>; b.eq +8; add x3, x3, #1;
// stp x0, x1, [sp, #-16]!; ldr x4, [sp]; add sp, sp, #16; (end)
inline constexpr std::array<std::uint32_t, 7> kTraced = {
    0xab010000, 0x58003fe2, 0x54000040, 0x91000463, 0xa9bf07e0, 0xf94003e4, 0x910043ff};
inline constexpr std::uint32_t kRet = 0xd65f03c0;

inline int xreg(int n) {
    return n == 29 ? UC_ARM64_REG_X29 : n == 30 ? UC_ARM64_REG_X30 : UC_ARM64_REG_X0 + n;
}

struct Machine {
    std::array<std::uint64_t, 31> x{};
    std::uint64_t sp = 0, pc = 0, nzcv = 0;
};

inline Machine read_machine(uc_engine* uc) {
    Machine m;
    for (int r = 0; r <= 30; ++r)
        uc_reg_read(uc, xreg(r), &m.x[static_cast<std::size_t>(r)]);
    uc_reg_read(uc, UC_ARM64_REG_SP, &m.sp);
    uc_reg_read(uc, UC_ARM64_REG_PC, &m.pc);
    uc_reg_read(uc, UC_ARM64_REG_NZCV, &m.nzcv);
    return m;
}

// The machine ends as it would have: pc, sp, NZCV and every x register.
inline void check_same_machine(const Machine& got, const Machine& want) {
    CHECK(got.pc == want.pc);
    CHECK(got.sp == want.sp);
    CHECK(got.nzcv == want.nzcv);
    for (std::size_t r = 0; r < want.x.size(); ++r) {
        INFO("x" << r);
        CHECK(got.x[r] == want.x[r]);
    }
}

template <typename T> T load(const std::vector<std::uint8_t>& b, std::size_t at) {
    T v;
    std::memcpy(&v, b.data() + at, sizeof v);
    return v;
}

} // namespace tpagent::test::unicorn_a64
