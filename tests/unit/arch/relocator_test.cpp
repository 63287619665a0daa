// The relocator, checked by running original and relocated code in Unicorn from the same state
// and comparing registers, flags and memory where execution leaves the displaced code.
#include "arch/x86_64/code_references.hpp"
#include "arch/x86_64/relocator.hpp"
#include "tests/unit/arch/unicorn_x86_64.hpp"
#include "tests/unit/test_bytes.hpp"

#include <catch2/catch.hpp>
#include <unicorn/unicorn.h>

#include <Zydis/Zydis.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <link.h>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace x86 = tpagent::arch::x86_64;
using namespace tpagent::test;

namespace {

constexpr std::uint64_t kFrom = 0x10001000;       // original code
constexpr std::uint64_t kNearPad = 0x20000000;    // within rel32 of everything
constexpr std::uint64_t kFarPad = 0x700000000000; // beyond ±2 GiB
constexpr std::uint64_t kData = 0x10100000;       // rip-relative data
constexpr std::uint64_t kStack = 0x30000000;      // rsp starts in the middle
constexpr std::uint64_t kRegion = 0x10000;        // mapped around each of the above
constexpr std::uint64_t kPage = 0x1000;

// Deterministic contents for a page mapped on demand, so both runs see the same bytes.
void fill_page(Bytes& page, std::uint64_t addr) {
    std::mt19937_64 g(addr * 0x9e3779b97f4a7c15ULL);
    for (auto& b : page)
        b = static_cast<std::uint8_t>(g());
}

// Any data access to unmapped memory maps a page there (instruction fetches are not mapped),
// up to a bound (a long `rep movs` from random registers would map pages without end).
bool map_on_demand(uc_engine* uc, uc_mem_type, std::uint64_t addr, int size, std::int64_t,
                   void* user) {
    int& budget = *static_cast<int*>(user);
    for (std::uint64_t p = addr & ~(kPage - 1); p < addr + std::max(size, 1); p += kPage) {
        if (budget-- <= 0 || uc_mem_map(uc, p, kPage, UC_PROT_ALL) != UC_ERR_OK) return false;
        Bytes page(kPage);
        fill_page(page, p);
        uc_mem_write(uc, p, page.data(), page.size());
    }
    return true;
}

// The initial state both runs start from.
struct Setup {
    std::array<std::uint64_t, 16> gpr{};
    std::uint64_t rflags = 0x202;
    std::array<std::array<std::uint64_t, 2>, 16> xmm{};
    std::map<std::uint64_t, Bytes> code; // address -> bytes (written into mapped regions)
    std::vector<std::uint64_t> regions;  // bases of kRegion-sized mappings
};

struct Outcome {
    uc_err err = UC_ERR_OK;
    std::uint64_t rip = 0;
    std::array<std::uint64_t, 16> gpr{};
    std::uint64_t rflags = 0;
    std::array<std::array<std::uint64_t, 2>, 16> xmm{};
    std::map<std::uint64_t, Bytes> memory; // region base -> contents
};

struct Stop {
    std::uint64_t lo, hi; // stop when rip leaves [lo, hi) or comes back to lo
    std::uint64_t steps = 0;
};

void leave_hook(uc_engine* uc, std::uint64_t addr, std::uint32_t, void* user) {
    auto* s = static_cast<Stop*>(user);
    if (s->steps++ > 0 && (addr <= s->lo || addr >= s->hi)) uc_emu_stop(uc);
}

// Runs from `start` until execution leaves [start, end) (or returns to start), or until
// `until` when given.
Outcome run(const Setup& s, std::uint64_t start, std::uint64_t end,
            std::optional<std::uint64_t> until = std::nullopt) {
    uc_engine* uc = nullptr;
    REQUIRE(uc_open(UC_ARCH_X86, UC_MODE_64, &uc) == UC_ERR_OK);
    for (std::uint64_t base : s.regions) {
        REQUIRE(uc_mem_map(uc, base, kRegion, UC_PROT_ALL) == UC_ERR_OK);
        Bytes fill(kRegion);
        for (std::uint64_t p = 0; p < kRegion; p += kPage) {
            Bytes page(kPage);
            fill_page(page, base + p);
            std::copy(page.begin(), page.end(), fill.begin() + p);
        }
        uc_mem_write(uc, base, fill.data(), fill.size());
    }
    for (const auto& [addr, bytes] : s.code)
        REQUIRE(uc_mem_write(uc, addr, bytes.data(), bytes.size()) == UC_ERR_OK);
    for (int i = 0; i < 16; ++i)
        uc_reg_write(uc, kGprs[i], &s.gpr[i]);
    uc_reg_write(uc, UC_X86_REG_RFLAGS, &s.rflags);
    for (int i = 0; i < 16; ++i)
        uc_reg_write(uc, UC_X86_REG_XMM0 + i, s.xmm[i].data());

    uc_hook h1, h2;
    int page_budget = 32;
    uc_hook_add(uc, &h1, UC_HOOK_MEM_READ_UNMAPPED | UC_HOOK_MEM_WRITE_UNMAPPED,
                reinterpret_cast<void*>(map_on_demand), &page_budget, 1, 0);
    Stop stop{start, end};
    if (!until)
        uc_hook_add(uc, &h2, UC_HOOK_CODE, reinterpret_cast<void*>(leave_hook), &stop, 1, 0);

    Outcome o;
    // The instruction count bounds every run (a timeout would cost a watchdog thread per run).
    o.err = uc_emu_start(uc, start, until.value_or(~0ULL), 0, 10000);
    uc_reg_read(uc, UC_X86_REG_RIP, &o.rip);
    for (int i = 0; i < 16; ++i)
        uc_reg_read(uc, kGprs[i], &o.gpr[i]);
    uc_reg_read(uc, UC_X86_REG_RFLAGS, &o.rflags);
    for (int i = 0; i < 16; ++i)
        uc_reg_read(uc, UC_X86_REG_XMM0 + i, o.xmm[i].data());
    uc_mem_region* regions = nullptr;
    std::uint32_t count = 0;
    uc_mem_regions(uc, &regions, &count);
    for (std::uint32_t i = 0; i < count; ++i) {
        Bytes b(regions[i].end - regions[i].begin + 1);
        uc_mem_read(uc, regions[i].begin, b.data(), b.size());
        o.memory[regions[i].begin] = std::move(b);
    }
    uc_free(regions);
    uc_close(uc);
    return o;
}

// Describes the first difference, or "" when the outcomes agree. `ignore` is a byte range
// of memory allowed to differ.
std::string difference(const Outcome& a, const Outcome& b,
                       std::pair<std::uint64_t, std::uint64_t> ignore = {0, 0}) {
    if (a.err != b.err)
        return std::string("error ") + uc_strerror(a.err) + " vs " + uc_strerror(b.err);
    if (a.rip != b.rip) return "rip " + hex(a.rip) + " vs " + hex(b.rip);
    for (int i = 0; i < 16; ++i)
        if (a.gpr[i] != b.gpr[i])
            return std::string(kGprNames[i]) + " " + hex(a.gpr[i]) + " vs " + hex(b.gpr[i]);
    if (a.rflags != b.rflags) return "rflags " + hex(a.rflags) + " vs " + hex(b.rflags);
    for (int i = 0; i < 16; ++i)
        if (a.xmm[i] != b.xmm[i]) return "xmm" + std::to_string(i);
    if (a.memory.size() != b.memory.size()) return "number of mapped regions";
    for (const auto& [base, bytes] : a.memory) {
        auto it = b.memory.find(base);
        if (it == b.memory.end() || it->second.size() != bytes.size()) return "region " + hex(base);
        for (std::size_t k = 0; k < bytes.size(); ++k)
            if (bytes[k] != it->second[k] &&
                !(base + k >= ignore.first && base + k < ignore.second))
                return "memory at " + hex(base + k);
    }
    return "";
}

std::uint64_t region_of(std::uint64_t a) {
    return a & ~(kRegion - 1);
}

// Fixed registers and flags for hand-written cases; `tweak` adjusts them.
Setup base_setup() {
    Setup s;
    for (int i = 0; i < 16; ++i)
        s.gpr[i] = 0x1111111111111111ULL * (i + 1);
    s.gpr[7] = kStack + kRegion / 2; // rsp
    for (int i = 0; i < 16; ++i)
        s.xmm[i] = {0x0123456789abcdefULL * (i + 1), ~0ULL * i};
    s.regions = {region_of(kFrom), region_of(kData), region_of(kStack)};
    return s;
}

struct Case {
    Bytes code;
    std::size_t min_bytes = 1;
    std::optional<std::uint64_t> until; // run to this address instead of "until it leaves"
    std::pair<std::uint64_t, std::uint64_t> ignore{0, 0};
};

// Relocates `c` from kFrom to `to`, runs both from `s`, and checks they agree.
x86::Relocated check_same(Setup s, const Case& c, std::uint64_t to) {
    auto r = x86::relocate(c.code, kFrom, to, c.min_bytes);
    INFO("code " << hex(c.code) << " to " << hex(to));
    REQUIRE(r.ok());
    INFO("pad " << hex(r->code));
    s.code[kFrom] = c.code;
    s.code[to] = r->code;
    if (std::find(s.regions.begin(), s.regions.end(), region_of(to)) == s.regions.end())
        s.regions.push_back(region_of(to));
    const Outcome orig = run(s, kFrom, kFrom + r->covered, c.until);
    const Outcome moved = run(s, to, to + r->code.size(), c.until);
    INFO("original stopped at " << hex(orig.rip) << " (" << uc_strerror(orig.err) << ")");
    CHECK(difference(orig, moved, c.ignore) == "");
    CHECK(orig.err == UC_ERR_OK);
    return *r;
}

void check_both_pads(const Setup& s, const Case& c) {
    SECTION("near pad") {
        check_same(s, c, kNearPad);
    }
    SECTION("far pad") {
        check_same(s, c, kFarPad);
    }
}

// rip-relative displacement of an instruction of `len` bytes at kFrom reaching `target`.
Bytes rip_disp(std::uint64_t target, std::size_t len) {
    return le32(static_cast<std::int64_t>(target - (kFrom + len)));
}

constexpr std::uint64_t kZF = 0x40, kCF = 0x1;

} // namespace

TEST_CASE("instruction_length decodes one instruction", "[relocator]") {
    const Bytes nop{0x90};
    const Bytes mov_rip{0x48, 0x8b, 0x05, 0, 0, 0, 0};
    const Bytes avx{0xc5, 0xfd, 0x6f, 0x44, 0x24, 0x20}; // vmovdqa ymm0, [rsp+0x20]
    CHECK(x86::instruction_length(nop, 0).value() == 1);
    CHECK(x86::instruction_length(mov_rip, 0).value() == 7);
    CHECK(x86::instruction_length(avx, 0).value() == 6);
    const Bytes truncated{0x48, 0x8b, 0x05, 0};
    auto r = x86::instruction_length(truncated, 0x1234);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == tpagent::ErrorCode::Unsupported);
    CHECK(r.error().text.find("0x1234") != std::string::npos);
    const Bytes bad{0x06}; // push es: invalid in 64-bit mode
    CHECK_FALSE(x86::instruction_length(bad, 0).ok());
}

TEST_CASE("position-independent instructions are copied", "[relocator]") {
    const Case c{{0x55, 0x48, 0x89, 0xe5, 0x48, 0x01, 0xd8}, 5}; // push rbp; mov rbp,rsp; add
    auto r = x86::relocate(c.code, kFrom, kNearPad, 5);
    REQUIRE(r.ok());
    CHECK(r->covered == 7);
    CHECK(Bytes(r->code.begin(), r->code.begin() + 7) == c.code);
    CHECK(r->code[7] == 0xe9); // jmp rel32 back
    REQUIRE(r->boundaries.size() == 4);
    CHECK(r->boundaries[1].from_offset == 1);
    CHECK(r->boundaries[3].from_offset == 7);
    CHECK(r->boundaries[3].pad_offset == 7);
    CHECK(x86::pad_offset_of(*r, 4) == 4u);
    CHECK_FALSE(x86::pad_offset_of(*r, 2).has_value());
    CHECK(x86::from_offset_of(*r, 7) == 7u);
    check_both_pads(base_setup(), c);
}

TEST_CASE("the jump back uses the absolute form beyond rel32", "[relocator]") {
    const Bytes nop{0x90};
    auto near = x86::relocate(nop, kFrom, kNearPad, 1);
    REQUIRE(near.ok());
    CHECK(near->code == cat({{0x90, 0xe9}, le32(kFrom + 1 - (kNearPad + 6))}));
    auto far = x86::relocate(nop, kFrom, kFarPad, 1);
    REQUIRE(far.ok());
    CHECK(far->code == Bytes{0x90, 0xff, 0x25, 0, 0, 0, 0, 0x01, 0x10, 0x00, 0x10, 0, 0, 0, 0});
    check_both_pads(base_setup(), {nop});
}

TEST_CASE("the harness notices a wrong relocation", "[relocator]") {
    // mov rax, [rip+x] copied verbatim to the pad reads another address.
    Setup s = base_setup();
    const Bytes code = cat({{0x48, 0x8b, 0x05}, rip_disp(kData + 0x40, 7)});
    s.code[kFrom] = code;
    s.code[kNearPad] = cat({code, {0xe9}, le32(kFrom + 7 - (kNearPad + 12))});
    s.regions.push_back(kNearPad);
    const Outcome orig = run(s, kFrom, kFrom + 7);
    const Outcome wrong = run(s, kNearPad, kNearPad + 12);
    CHECK(orig.rip == kFrom + 7);
    CHECK(difference(orig, wrong) == "rax " + hex(orig.gpr[0]) + " vs " + hex(wrong.gpr[0]));
}

TEST_CASE("rip-relative operands are re-aimed", "[relocator]") {
    Setup s = base_setup();
    const std::uint64_t d = kData + 0x80;
    SECTION("mov rax, [rip+x]") {
        check_same(s, {cat({{0x48, 0x8b, 0x05}, rip_disp(d, 7)})}, kNearPad);
    }
    SECTION("mov [rip+x], rbx") {
        check_same(s, {cat({{0x48, 0x89, 0x1d}, rip_disp(d, 7)})}, kNearPad);
    }
    SECTION("lea rsi, [rip+x]") {
        check_same(s, {cat({{0x48, 0x8d, 0x35}, rip_disp(d, 7)})}, kNearPad);
    }
    SECTION("cmp qword [rip+x], 5 (an immediate after the displacement)") {
        check_same(s, {cat({{0x48, 0x83, 0x3d}, rip_disp(d, 8), {0x05}})}, kNearPad);
    }
    SECTION("mov dword [rip+x], imm32") {
        check_same(s, {cat({{0xc7, 0x05}, rip_disp(d, 10), le32(0x12345678)})}, kNearPad);
    }
    SECTION("movdqu xmm3, [rip+x]") {
        check_same(s, {cat({{0xf3, 0x0f, 0x6f, 0x1d}, rip_disp(d, 8)})}, kNearPad);
    }
    SECTION("addsd xmm1, [rip+x]") {
        check_same(s, {cat({{0xf2, 0x0f, 0x58, 0x0d}, rip_disp(d, 8)})}, kNearPad);
    }
    SECTION("jmp [rip+x]") {
        // The pointer at d leads back into the code region.
        s.code[d] = {0x00, 0x20, 0x00, 0x10, 0, 0, 0, 0}; // 0x10002000
        check_same(s, {cat({{0xff, 0x25}, rip_disp(d, 6)})}, kNearPad);
    }
    SECTION("a window of several rip-relative instructions") {
        check_same(
            s,
            {cat({{0x48, 0x8b, 0x05}, rip_disp(d, 7), {0x48, 0x89, 0x05}, rip_disp(d + 8, 14)}),
             14},
            kNearPad);
    }
}

TEST_CASE("rip-relative operands beyond rel32 of the pad are refused", "[relocator]") {
    const Bytes code = cat({{0x48, 0x8b, 0x05}, rip_disp(kData, 7)});
    auto r = x86::relocate(code, kFrom, kFarPad, 1);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == tpagent::ErrorCode::Unsupported);
    CHECK(r.error().text == "cannot relocate 'mov rax, [0x10100000]' at 0x10001000: its "
                            "operand 0x10100000 is beyond ±2 GiB of the pad at 0x700000000000");
    // Exactly at the edge of the range works; one byte further does not.
    const std::uint64_t edge = kFrom + 7 - INT32_MIN; // pad such that disp = INT32_MIN
    CHECK(x86::relocate(code, kFrom, kData - INT32_MIN - 7, 1).ok());
    CHECK_FALSE(x86::relocate(code, kFrom, kData - INT32_MIN - 6, 1).ok());
    (void)edge;
}

TEST_CASE("relative jumps", "[relocator]") {
    Setup s = base_setup();
    SECTION("jmp rel8 forward") {
        check_both_pads(s, {{0xeb, 0x40}});
    }
    SECTION("jmp rel8 backward") {
        check_both_pads(s, {{0xeb, 0x80}});
    }
    SECTION("jmp rel32") {
        check_both_pads(s, {cat({{0xe9}, le32(0x1234)})});
    }
    SECTION("jmp rel32 backward") {
        check_both_pads(s, {cat({{0xe9}, le32(-0x800)})});
    }
    SECTION("jmp $ goes back to the tracepoint") {
        check_both_pads(s, {{0xeb, 0xfe}});
    }
}

TEST_CASE("conditional jumps, taken and not taken", "[relocator]") {
    Setup s = base_setup();
    const auto flags = GENERATE(0x202ULL, 0x202ULL | kZF, 0x202ULL | kCF, 0x202ULL | kZF | kCF,
                                0x202ULL | 0x880); // SF and OF
    s.rflags = flags;
    const auto cc = GENERATE(range(0, 16));
    INFO("cc " << cc << " rflags " << hex(flags));
    SECTION("rel8") {
        check_both_pads(s, {{static_cast<std::uint8_t>(0x70 + cc), 0x30}});
    }
    SECTION("rel32") {
        check_both_pads(s, {cat({{0x0f, static_cast<std::uint8_t>(0x80 + cc)}, le32(-0x300)})});
    }
}

TEST_CASE("loop, loope, loopne, jrcxz, jecxz", "[relocator]") {
    Setup s = base_setup();
    const auto rcx = GENERATE(0ULL, 1ULL, 2ULL, 0x100000000ULL, 0x100000001ULL);
    s.gpr[2] = rcx;
    const auto zf = GENERATE(0ULL, kZF);
    s.rflags = 0x202 | zf;
    INFO("rcx " << hex(rcx) << " zf " << zf);
    SECTION("loop") {
        check_both_pads(s, {{0xe2, 0x20}});
    }
    SECTION("loop back to itself") {
        check_both_pads(s, {{0xe2, 0xfe}});
    }
    SECTION("loope") {
        check_both_pads(s, {{0xe1, 0xe0}});
    }
    SECTION("loopne") {
        check_both_pads(s, {{0xe0, 0x20}});
    }
    SECTION("jrcxz") {
        check_both_pads(s, {{0xe3, 0x20}});
    }
    SECTION("jecxz") {
        check_both_pads(s, {{0x67, 0xe3, 0x20}});
    }
    SECTION("loopd (ecx)") {
        check_both_pads(s, {{0x67, 0xe2, 0x20}});
    }
}

TEST_CASE("call rel32 pushes the original return address", "[relocator]") {
    Setup s = base_setup();
    SECTION("forward") {
        const Case c{cat({{0xe8}, le32(0x500)})};
        check_both_pads(s, c);
        auto r = x86::relocate(c.code, kFrom, kFarPad, 1);
        REQUIRE(r.ok());
        s.code[kFrom] = c.code;
        s.code[kFarPad] = r->code;
        s.regions.push_back(region_of(kFarPad));
        const Outcome o = run(s, kFarPad, kFarPad + r->code.size());
        CHECK(o.rip == kFrom + 5 + 0x500);
        CHECK(o.gpr[7] == s.gpr[7] - 8);
        std::uint64_t ret = 0;
        std::memcpy(&ret, o.memory.at(kStack).data() + (o.gpr[7] - kStack), 8);
        CHECK(ret == kFrom + 5);
    }
    SECTION("backward") {
        check_both_pads(s, {cat({{0xe8}, le32(-0x500)})});
    }
    SECTION("return address needing two dwords") {
        // A return address that is no sign-extended imm32.
        const std::uint64_t from = 0x7f0000001000;
        const Bytes code = cat({{0xe8}, le32(0x100)});
        auto r = x86::relocate(code, from, from + 0x10000, 1);
        REQUIRE(r.ok());
        Setup t = base_setup();
        t.regions.push_back(region_of(from));
        t.regions.push_back(region_of(from + 0x10000));
        t.code[from] = code;
        t.code[from + 0x10000] = r->code;
        const Outcome a = run(t, from, from + 5);
        const Outcome b = run(t, from + 0x10000, from + 0x10000 + r->code.size());
        CHECK(a.rip == from + 5 + 0x100);
        CHECK(difference(a, b) == "");
    }
}

TEST_CASE("indirect calls push the original return address", "[relocator]") {
    Setup s = base_setup();
    const std::uint64_t target = kFrom + 0x3000;
    // The trampoline leaves two qwords below the callee's stack pointer, which nothing owns.
    auto c = [&s](Bytes code) {
        return Case{code, 1, std::nullopt, {s.gpr[7] - 24, s.gpr[7] - 8}};
    };
    SECTION("call rax") {
        s.gpr[0] = target;
        check_both_pads(s, c({0xff, 0xd0}));
    }
    SECTION("call r11") {
        s.gpr[11] = target;
        check_both_pads(s, c({0x41, 0xff, 0xd3}));
    }
    SECTION("call [rip+x]") {
        s.code[kData + 0x100] = le32(target);
        s.code[kData + 0x104] = le32(0);
        const Bytes code = cat({{0xff, 0x15}, rip_disp(kData + 0x100, 6)});
        check_same(s, c(code), kNearPad);
        CHECK_FALSE(x86::relocate(code, kFrom, kFarPad, 1).ok());
    }
    SECTION("call [rsp+8]") {
        s.code[s.gpr[7] + 8] = cat({le32(target), le32(0)});
        check_both_pads(s, c({0xff, 0x54, 0x24, 0x08}));
    }
    SECTION("call [rsp-8]: the slot the call overwrites") {
        s.code[s.gpr[7] - 8] = cat({le32(target), le32(0)});
        check_both_pads(s, c({0xff, 0x54, 0x24, 0xf8}));
    }
    SECTION("call [rax+rbx*8+0x10]") {
        s.gpr[0] = kData;
        s.gpr[1] = 4;
        s.code[kData + 0x30] = cat({le32(target), le32(0)});
        check_both_pads(s, c({0xff, 0x54, 0xd8, 0x10}));
    }
    SECTION("call rsp") {
        s.gpr[7] = kFrom + 0x2000; // a stack in the code region, so the target is code
        check_both_pads(s, c({0xff, 0xd4}));
    }
}

TEST_CASE("a call inside a fast-tracepoint window returns into the pad", "[relocator]") {
    // call rax; add rax, rbx: the callee returns to the add, which the jump overwrote.
    Setup s = base_setup();
    const std::uint64_t callee = kFrom + 0x3000;
    s.code[callee] = {0x48, 0x83, 0xc0, 0x07, 0xc3}; // add rax, 7; ret
    s.gpr[0] = callee;
    const std::uint64_t slot = s.gpr[7] - 8; // the stale return address differs
    const Case c{{0xff, 0xd0, 0x48, 0x01, 0xd8}, 5, kFrom + 5, {slot, slot + 8}};
    SECTION("call r/m") {
        check_both_pads(s, c);
    }
    SECTION("call rel32") {
        const Case d{cat({{0xe8}, le32(callee - (kFrom + 5)), {0x48, 0x01, 0xd8}}),
                     5,
                     kFrom + 8,
                     {slot, slot + 8}};
        check_both_pads(s, d);
    }
}

TEST_CASE("branches inside the window go to the pad", "[relocator]") {
    Setup s = base_setup();
    const auto zf = GENERATE(0ULL, kZF);
    s.rflags = 0x202 | zf;
    SECTION("jmp over a nop") {
        check_both_pads(s, {{0xeb, 0x01, 0x90, 0x48, 0x01, 0xd8}, 5});
    }
    SECTION("je over a nop") {
        const Case c{{0x74, 0x01, 0x90, 0x48, 0x01, 0xd8}, 5};
        auto r = check_same(s, c, kNearPad);
        CHECK(r.covered == 6);
    }
    SECTION("into the middle of an instruction is refused") {
        const Bytes code{0xeb, 0x02, 0x48, 0x01, 0xd8};
        auto r = x86::relocate(code, kFrom, kNearPad, 5);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().text.find("middle") != std::string::npos);
    }
}

TEST_CASE("a thread moved to the pad at a boundary continues the same way", "[relocator]") {
    Setup s = base_setup();
    s.rflags = GENERATE(0x202ULL, 0x202ULL | kZF);
    // push rbp; je +0x10; mov rax, [rip+x]
    const Bytes code = cat({{0x55, 0x74, 0x10, 0x48, 0x8b, 0x05}, rip_disp(kData, 10)});
    auto r = x86::relocate(code, kFrom, kNearPad, 5);
    REQUIRE(r.ok());
    REQUIRE(r->covered == 10);
    REQUIRE(r->boundaries.size() == 4);
    s.code[kFrom] = code;
    s.code[kNearPad] = r->code;
    s.regions.push_back(kNearPad);
    for (const auto& b : r->boundaries) {
        INFO("boundary " << b.from_offset);
        CHECK(x86::from_offset_of(*r, b.pad_offset) == b.from_offset);
        const Outcome m = run(s, kNearPad + b.pad_offset, kNearPad + r->code.size());
        if (b.from_offset == r->covered) { // the jump back
            CHECK(m.rip == kFrom + r->covered);
            continue;
        }
        const Outcome a = run(s, kFrom + b.from_offset, kFrom + r->covered);
        CHECK(difference(a, m) == "");
    }
}

TEST_CASE("instructions that cannot be relocated are refused with their name", "[relocator]") {
    auto refused = [](const Bytes& code, std::size_t min = 1) {
        auto r = x86::relocate(code, kFrom, kNearPad, min);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == tpagent::ErrorCode::Unsupported);
        return r.error().text;
    };
    CHECK(refused(cat({{0xc7, 0xf8}, le32(0x100)})) ==
          "cannot relocate 'xbegin 0x10001106' at 0x10001000: its abort address is relative to the "
          "instruction");
    CHECK(refused(cat({{0xff, 0x1d}, le32(0)})).find("far call") != std::string::npos);
    CHECK(refused({0x66, 0xe9, 0x10, 0x00, 0x00, 0x00}).find("operand-size") != std::string::npos);
    CHECK(refused({0x90, 0x48, 0x8b}, 5).find("longer than") != std::string::npos);
    CHECK(refused({0x06}).find("cannot decode the instruction at 0x10001000") == 0);
}

TEST_CASE("syscall moves and leaves the pad address in rcx", "[relocator]") {
    auto r = x86::relocate(Bytes{0x0f, 0x05}, kFrom, kNearPad, 1);
    REQUIRE(r.ok());
    CHECK(Bytes(r->code.begin(), r->code.begin() + 2) == Bytes{0x0f, 0x05});
}

namespace {

// The executable part of the C library this test runs with: plenty of real compiled code.
std::span<const std::uint8_t> libc_text() {
    static std::span<const std::uint8_t> text;
    if (text.empty())
        dl_iterate_phdr(
            [](dl_phdr_info* info, std::size_t, void*) {
                if (!info->dlpi_name || !std::strstr(info->dlpi_name, "libc.so")) return 0;
                for (int i = 0; i < info->dlpi_phnum; ++i) {
                    const auto& ph = info->dlpi_phdr[i];
                    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
                        text = {reinterpret_cast<const std::uint8_t*>(info->dlpi_addr + ph.p_vaddr),
                                ph.p_memsz};
                }
                return 1;
            },
            nullptr);
    return text;
}

bool has_mnemonic(std::span<const std::uint8_t> code, std::size_t covered,
                  std::initializer_list<ZydisMnemonic> which, bool calls = false) {
    ZydisDecoder d;
    ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    ZydisDecodedInstruction insn;
    for (std::size_t off = 0; off < covered; off += insn.length) {
        if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&d, nullptr, code.data() + off,
                                                      code.size() - off, &insn)))
            return false;
        if (std::find(which.begin(), which.end(), insn.mnemonic) != which.end()) return true;
        if (calls && insn.meta.category == ZYDIS_CATEGORY_CALL) return true;
    }
    return false;
}

// Whether `code` (relocated as `r` from `from` to `to`) holds an instruction whose outcome
// differs by design from its relocated run's: rcx after syscall is where it returns to, and
// these read clocks or entropy.
bool differs_by_design(std::span<const std::uint8_t> code, const x86::Relocated& r) {
    return has_mnemonic(code, r.covered,
                        {ZYDIS_MNEMONIC_SYSCALL, ZYDIS_MNEMONIC_RDTSC, ZYDIS_MNEMONIC_RDTSCP,
                         ZYDIS_MNEMONIC_RDRAND, ZYDIS_MNEMONIC_RDSEED, ZYDIS_MNEMONIC_RDPID});
}

// Runs `code` at `from` and its relocation `r` at `to` from one random state, from every
// instruction boundary, and checks that they agree; returns how many runs it compared.
int check_from_every_boundary(const Bytes& code, std::uint64_t from, std::uint64_t to,
                              const x86::Relocated& r, std::mt19937_64& g) {
    Setup s;
    for (auto& v : s.gpr)
        v = (g() % 4 == 0) ? g() % 4 : g() & ((1ULL << 47) - 1);
    s.gpr[7] = kStack + kRegion / 2 + 8 * (g() % 64);
    s.rflags = 0x202 | (g() & 0x8d5);
    for (auto& x : s.xmm)
        x = {g(), g()};
    s.regions = {region_of(from), region_of(to), region_of(kStack)};
    s.code[from] = code;
    s.code[to] = r.code;
    INFO("pad " << hex(r.code));
    std::pair<std::uint64_t, std::uint64_t> ignore{0, 0};
    if (has_mnemonic(code, r.covered, {}, true)) ignore = {s.gpr[7] - 24, s.gpr[7] - 8};
    int ran = 0;
    for (const auto& b : r.boundaries) {
        if (b.from_offset == r.covered) break;
        INFO("from boundary " << b.from_offset);
        const Outcome a = run(s, from + b.from_offset, from + r.covered);
        Outcome m = run(s, to + b.pad_offset, to + r.code.size());
        // A fault inside the pad is reported at the matching original instruction.
        if (m.err != UC_ERR_OK && m.rip >= to && m.rip < to + r.code.size()) {
            const auto off = x86::from_offset_of(r, m.rip - to);
            CHECK(off.has_value());
            if (off) m.rip = from + *off;
        }
        CHECK(difference(a, m, ignore) == "");
        ++ran;
    }
    return ran;
}

} // namespace

TEST_CASE("random real instructions behave the same when relocated far away", "[relocator]") {
    const auto text = libc_text();
    REQUIRE(text.size() > 0x10000);
    const std::uint64_t seed = GENERATE(1, 2);
    std::mt19937_64 g(seed);
    const std::uint64_t from = 0x500000001000;
    int ran = 0, refused_far = 0;
    for (int sample = 0; sample < 150; ++sample) {
        const std::size_t min_bytes = (g() & 1) ? 1 : 5;
        const std::size_t at = g() % (text.size() - 64);
        const Bytes code(text.begin() + at, text.begin() + at + 48);
        // Near pads within ±1 GiB, far ones 4..68 GiB away; each at a random place in a region.
        const bool far = g() % 3 == 0;
        const std::int64_t dist =
            static_cast<std::int64_t>(
                (far ? (1ULL << 32) + g() % (1ULL << 36) : g() % (1ULL << 30)) + kRegion) *
            ((g() & 1) ? 1 : -1);
        const std::uint64_t to = region_of(from + dist) + g() % (kRegion / 2);
        INFO("seed " << seed << " sample " << sample << " libc+" << hex(at) << " code " << hex(code)
                     << " to " << hex(to) << " min " << min_bytes);
        auto r = x86::relocate(code, from, to, min_bytes);
        if (!r.ok()) {
            INFO(r.error().text);
            CHECK(r.error().code == tpagent::ErrorCode::Unsupported);
            const bool expected =
                r.error().text.find("beyond ±2 GiB") != std::string::npos ||
                r.error().text.find("cannot decode") == 0 ||
                r.error().text.find("middle of a displaced") != std::string::npos ||
                r.error().text.find("operand-size") != std::string::npos ||
                r.error().text.find("far call") != std::string::npos ||
                r.error().text.find("xbegin") != std::string::npos;
            CHECK(expected);
            refused_far += far;
            continue;
        }
        if (differs_by_design(code, *r)) continue;
        ran += check_from_every_boundary(code, from, to, *r, g);
    }
    CHECK(ran > 120);
    CHECK(refused_far < 50);
}

namespace {

// The addresses (in this process) of the C library's exported functions, from its file's
// dynamic symbol table: where `ftrace FUNC` puts a fast tracepoint in a stripped library.
std::vector<std::uint64_t> libc_functions() {
    std::string path;
    std::uint64_t bias = 0;
    struct Found {
        std::string* path;
        std::uint64_t* bias;
    } found{&path, &bias};
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* user) {
            if (!info->dlpi_name || !std::strstr(info->dlpi_name, "libc.so")) return 0;
            auto* f = static_cast<Found*>(user);
            *f->path = info->dlpi_name;
            *f->bias = info->dlpi_addr;
            return 1;
        },
        &found);
    std::vector<std::uint64_t> out;
    FILE* file = path.empty() ? nullptr : std::fopen(path.c_str(), "rb");
    if (!file) return out;
    std::vector<std::uint8_t> elf;
    std::uint8_t buf[1 << 16];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, file)) > 0;)
        elf.insert(elf.end(), buf, buf + n);
    std::fclose(file);
    Elf64_Ehdr eh;
    std::memcpy(&eh, elf.data(), sizeof eh);
    for (int i = 0; i < eh.e_shnum; ++i) {
        Elf64_Shdr sh;
        std::memcpy(&sh, elf.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_DYNSYM) continue;
        for (std::uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size;
             off += sizeof(Elf64_Sym)) {
            Elf64_Sym sym;
            std::memcpy(&sym, elf.data() + sh.sh_offset + off, sizeof sym);
            if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx != SHN_UNDEF &&
                sym.st_value != 0)
                out.push_back(bias + sym.st_value);
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

} // namespace

// The windows a fast tracepoint displaces at the start of real functions, most of them longer
// than the instruction there (x86-64 compilers start functions with 1..4-byte pushes, movs
// and xors): every one displacement_hazard lets move runs the same from a pad, from every
// instruction boundary in it, from random states.
TEST_CASE("windows displaced at a real library's functions run the same from a pad",
          "[relocator]") {
    const auto functions = libc_functions();
    REQUIRE(functions.size() > 500);
    std::mt19937_64 g(46);
    const std::uint64_t from = 0x500000001000;
    int ran = 0, longer = 0, refused = 0;
    for (std::size_t i = 0; i < functions.size(); i += functions.size() / 300) {
        const Bytes code(reinterpret_cast<const std::uint8_t*>(functions[i]),
                         reinterpret_cast<const std::uint8_t*>(functions[i]) + 24);
        const std::uint64_t to = region_of(from + 0x40000000) + g() % (kRegion / 2);
        INFO("libc function at " << hex(functions[i]) << " code " << hex(code));
        auto r = x86::relocate(code, from, to, 5);
        if (!r.ok() || x86::displacement_hazard(code, from, *r)) {
            ++refused;
            continue;
        }
        if (r->boundaries.size() > 2) ++longer;
        if (differs_by_design(code, *r)) continue;
        for (int state = 0; state < 2; ++state)
            ran += check_from_every_boundary(code, from, to, *r, g);
    }
    INFO("ran " << ran << ", windows of several instructions " << longer << ", refused "
                << refused);
    CHECK(longer > 150); // most functions start with an instruction shorter than the jump
    CHECK(refused < 60);
    CHECK(ran > 600);
}
