// Registers of a real stopped child: read through ptrace, checked at their g offsets,
// changed through the g block, and verified by the child itself after it resumes.
#include "arch/x86_64/architecture.hpp"
#include "tests/unit/arch/traced_child.hpp"
#include "tests/unit/skip.hpp"
#include <catch2/catch.hpp>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sys/ptrace.h>

using namespace tpagent::arch;
using namespace tpagent::arch::x86_64;
using tpagent::test::TracedChild;

namespace {

// Values the child loads before int3 (in) and the values the parent writes (want).
struct RegisterValues {
    std::uint64_t rax, rbx, r12;
    std::uint64_t pad;
    std::uint8_t xmm0[16];
    std::uint8_t ymm1[32];
    std::uint8_t st0[16]; // 80-bit extended in the low 10 bytes
};

// xmm0 counts up from `xmm0`, ymm1 from 0x10 in its low half (xmm1, never written) and from
// `ymm1h` in its high half; st0 holds the 80-bit `st0`.
RegisterValues values(std::uint64_t rax, std::uint64_t rbx, std::uint64_t r12, std::uint8_t xmm0,
                      std::uint8_t ymm1h, const std::array<std::uint8_t, 10>& st0) {
    RegisterValues v{rax, rbx, r12, 0, {}, {}, {}};
    for (int i = 0; i < 16; ++i) {
        v.xmm0[i] = static_cast<std::uint8_t>(xmm0 + i);
        v.ymm1[i] = static_cast<std::uint8_t>(0x10 + i);
        v.ymm1[16 + i] = static_cast<std::uint8_t>(ymm1h + i);
    }
    std::memcpy(v.st0, st0.data(), st0.size());
    return v;
}

// st0 1.5L: mantissa 0xC000000000000000, exponent 0x3fff.
alignas(64) const RegisterValues kLoaded = values(0x1111222233334444ull, 0x5555666677778888ull,
                                                  0x0123456789abcdefull, 0x00, 0x20,
                                                  {0, 0, 0, 0, 0, 0, 0, 0xc0, 0xff, 0x3f});
// st0 -2.0L
alignas(64) const RegisterValues kWritten = values(0xfeedfacecafebeefull, 0x0badf00d0badf00dull,
                                                   0x7777777777777777ull, 0xa0, 0xb0,
                                                   {0, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 0xc0});

alignas(64) RegisterValues g_seen;

// Loads kLoaded, traps, then stores what the registers hold into g_seen and exits 0 if that
// is kWritten (bit flags name what differs otherwise).
__attribute__((target("avx"), noinline)) void register_child() {
    __asm__ volatile("fninit\n\t"
                     "fldt 0x50(%%rdi)\n\t"
                     "vmovdqu 0x20(%%rdi), %%xmm0\n\t"
                     "vmovdqu 0x30(%%rdi), %%ymm1\n\t"
                     "mov 0x00(%%rdi), %%rax\n\t"
                     "mov 0x08(%%rdi), %%rbx\n\t"
                     "mov 0x10(%%rdi), %%r12\n\t"
                     "int3\n\t"
                     "mov %%rax, 0x00(%%rsi)\n\t"
                     "mov %%rbx, 0x08(%%rsi)\n\t"
                     "mov %%r12, 0x10(%%rsi)\n\t"
                     "vmovdqu %%xmm0, 0x20(%%rsi)\n\t"
                     "vmovdqu %%ymm1, 0x30(%%rsi)\n\t"
                     "fstpt 0x50(%%rsi)\n\t"
                     "vzeroupper\n\t"
                     :
                     : "D"(&kLoaded), "S"(&g_seen)
                     : "rax", "rbx", "r12", "xmm0", "xmm1", "memory");
    int bad = 0;
    if (g_seen.rax != kWritten.rax || g_seen.rbx != kWritten.rbx || g_seen.r12 != kWritten.r12)
        bad |= 1;
    if (std::memcmp(g_seen.xmm0, kWritten.xmm0, 16) != 0) bad |= 2;
    if (std::memcmp(g_seen.ymm1, kWritten.ymm1, 32) != 0) bad |= 4;
    if (std::memcmp(g_seen.st0, kWritten.st0, 10) != 0) bad |= 8;
    _exit(bad);
}

template <typename T> T at(const std::vector<std::uint8_t>& g, std::size_t off) {
    T v;
    std::memcpy(&v, g.data() + off, sizeof v);
    return v;
}

} // namespace

TEST_CASE("x86-64 registers of a stopped child read and write through the g block") {
    if (!__builtin_cpu_supports("avx")) {
        tpagent::test::skip("this CPU has no AVX (ymm registers)");
        return;
    }
    const auto& arch = static_cast<const X86_64Architecture&>(host_architecture());
    const RegisterLayout& layout = arch.layout();
    REQUIRE(layout.find("ymm1h") >= 0);

    TracedChild child(register_child);
    REQUIRE(child.stopped());
    REQUIRE(child.resume() == SIGTRAP);

    RegisterSnapshot s;
    auto status = arch.read_snapshot(child.pid(), s);
    REQUIRE(status.ok());
    std::vector<std::uint8_t> g(arch.g_size());
    std::vector<bool> available;
    arch.snapshot_to_g(s, g, available);
    for (std::size_t r = 0; r < available.size(); ++r) {
        CAPTURE(layout.registers()[r].name);
        CHECK(available[r]);
    }

    // Documented offsets (gdb's amd64-linux g layout).
    CHECK(at<std::uint64_t>(g, 0) == kLoaded.rax);
    CHECK(at<std::uint64_t>(g, 8) == kLoaded.rbx);
    CHECK(at<std::uint64_t>(g, 96) == kLoaded.r12);
    CHECK(std::memcmp(g.data() + 164, kLoaded.st0, 10) == 0);
    CHECK(at<std::uint32_t>(g, 244) == 0x37f);           // fctrl after fninit
    CHECK(((at<std::uint32_t>(g, 248) >> 11) & 7) == 7); // TOP after one push
    CHECK(at<std::uint32_t>(g, 252) == 0x3fff);          // physical 7 valid, others empty
    CHECK(std::memcmp(g.data() + 276, kLoaded.xmm0, 16) == 0);
    CHECK(std::memcmp(g.data() + 276 + 16, kLoaded.ymm1, 16) == 0);      // xmm1
    CHECK(std::memcmp(g.data() + 560 + 16, kLoaded.ymm1 + 16, 16) == 0); // ymm1h

    // The trap left pc just after the int3.
    const std::uint64_t pc = arch.pc(s);
    CHECK(at<std::uint64_t>(g, 128) == pc);
    errno = 0;
    const long word = ptrace(PTRACE_PEEKTEXT, child.pid(), pc - 1, nullptr);
    REQUIRE(errno == 0);
    CHECK((word & 0xff) == 0xCC);
    CHECK(arch.sp(s) == at<std::uint64_t>(g, 56));

    std::memcpy(g.data() + 0, &kWritten.rax, 8);
    std::memcpy(g.data() + 8, &kWritten.rbx, 8);
    std::memcpy(g.data() + 96, &kWritten.r12, 8);
    std::memcpy(g.data() + 164, kWritten.st0, 10);
    std::memcpy(g.data() + 276, kWritten.xmm0, 16);
    std::memcpy(g.data() + 560 + 16, kWritten.ymm1 + 16, 16);
    arch.g_to_snapshot(g, s);
    status = arch.write_snapshot(child.pid(), s);
    REQUIRE(status.ok());

    REQUIRE(child.resume() == -1);
    CHECK(child.exit_status() == 0);
}

TEST_CASE("x86-64 set_pc moves a stopped child") {
    const Architecture& arch = host_architecture();
    TracedChild child([] {
        __asm__ volatile("int3\n\t"
                         "int3\n\t" // skipped by the parent
                         "nop");
        _exit(7);
    });
    REQUIRE(child.resume() == SIGTRAP);
    RegisterSnapshot s;
    REQUIRE(arch.read_snapshot(child.pid(), s).ok());
    arch.set_pc(s, arch.pc(s) + 1);
    REQUIRE(arch.write_snapshot(child.pid(), s).ok());
    REQUIRE(child.resume() == -1);
    CHECK(child.exit_status() == 7);
}

TEST_CASE("x86-64 read_snapshot of a missing thread is an error") {
    RegisterSnapshot s;
    const auto status = host_architecture().read_snapshot(0x7ffffff0, s);
    REQUIRE_FALSE(status.ok());
    CHECK(status.error().code == tpagent::ErrorCode::NoProcess);
}

namespace {

struct Avx512Values {
    std::uint64_t k1;
    std::uint64_t pad[7];
    std::uint8_t zmm2[64];
    std::uint8_t zmm17[64];
};

Avx512Values pattern(std::uint8_t base) {
    Avx512Values v{};
    v.k1 = 0xa5a5a5a5a5a5a5a5ull ^ base;
    for (int i = 0; i < 64; ++i) {
        v.zmm2[i] = static_cast<std::uint8_t>(base + i);
        v.zmm17[i] = static_cast<std::uint8_t>(base + 0x40 + i);
    }
    return v;
}

alignas(64) const Avx512Values kAvx512Loaded = pattern(0x00);
alignas(64) const Avx512Values kAvx512Written = pattern(0x80);
alignas(64) Avx512Values g_avx512_seen;

__attribute__((target("avx512f,avx512bw"), noinline)) void avx512_child() {
    __asm__ volatile("kmovq 0x00(%%rdi), %%k1\n\t"
                     "vmovdqu64 0x40(%%rdi), %%zmm2\n\t"
                     "vmovdqu64 0x80(%%rdi), %%zmm17\n\t"
                     "int3\n\t"
                     "kmovq %%k1, 0x00(%%rsi)\n\t"
                     "vmovdqu64 %%zmm2, 0x40(%%rsi)\n\t"
                     "vmovdqu64 %%zmm17, 0x80(%%rsi)\n\t"
                     "vzeroupper\n\t"
                     :
                     : "D"(&kAvx512Loaded), "S"(&g_avx512_seen)
                     : "k1", "xmm2", "xmm17", "memory");
    int bad = 0;
    if (g_avx512_seen.k1 != kAvx512Written.k1) bad |= 1;
    if (std::memcmp(g_avx512_seen.zmm2, kAvx512Written.zmm2, 64) != 0) bad |= 2;
    if (std::memcmp(g_avx512_seen.zmm17, kAvx512Written.zmm17, 64) != 0) bad |= 4;
    _exit(bad);
}

} // namespace

TEST_CASE("x86-64 AVX-512 registers of a stopped child read and write through the g block") {
    const auto& arch = static_cast<const X86_64Architecture&>(host_architecture());
    const RegisterLayout& layout = arch.layout();
    if (layout.find("k1") < 0 || !__builtin_cpu_supports("avx512bw")) {
        tpagent::test::skip("no AVX-512 in this CPU's XCR0 (k and zmm registers)");
        return;
    }
    const auto off = [&](const char* name) {
        return layout.registers()[layout.find(name)].g_offset;
    };

    TracedChild child(avx512_child);
    REQUIRE(child.resume() == SIGTRAP);
    RegisterSnapshot s;
    REQUIRE(arch.read_snapshot(child.pid(), s).ok());
    std::vector<std::uint8_t> g(arch.g_size());
    std::vector<bool> available;
    arch.snapshot_to_g(s, g, available);

    const Avx512Values& in = kAvx512Loaded;
    CHECK(at<std::uint64_t>(g, off("k1")) == in.k1);
    CHECK(std::memcmp(g.data() + off("xmm2"), in.zmm2, 16) == 0);
    CHECK(std::memcmp(g.data() + off("ymm2h"), in.zmm2 + 16, 16) == 0);
    CHECK(std::memcmp(g.data() + off("zmm2h"), in.zmm2 + 32, 32) == 0);
    CHECK(std::memcmp(g.data() + off("xmm17"), in.zmm17, 16) == 0);
    CHECK(std::memcmp(g.data() + off("ymm17h"), in.zmm17 + 16, 16) == 0);
    CHECK(std::memcmp(g.data() + off("zmm17h"), in.zmm17 + 32, 32) == 0);

    const Avx512Values& out = kAvx512Written;
    std::memcpy(g.data() + off("k1"), &out.k1, 8);
    std::memcpy(g.data() + off("xmm2"), out.zmm2, 16);
    std::memcpy(g.data() + off("ymm2h"), out.zmm2 + 16, 16);
    std::memcpy(g.data() + off("zmm2h"), out.zmm2 + 32, 32);
    std::memcpy(g.data() + off("xmm17"), out.zmm17, 16);
    std::memcpy(g.data() + off("ymm17h"), out.zmm17 + 16, 16);
    std::memcpy(g.data() + off("zmm17h"), out.zmm17 + 32, 32);
    arch.g_to_snapshot(g, s);
    REQUIRE(arch.write_snapshot(child.pid(), s).ok());
    REQUIRE(child.resume() == -1);
    CHECK(child.exit_status() == 0);
}
