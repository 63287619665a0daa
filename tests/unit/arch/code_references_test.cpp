// The x86-64 code sweep (what reaches into a module's code) and the displacement check of a
// fast tracepoint's jump at an instruction shorter than itself, from encodings checked with
// objdump.
#include "arch/x86_64/code_references.hpp"
#include "arch/x86_64/relocator.hpp"
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

namespace x86 = tpagent::arch::x86_64;
using Bytes = std::vector<std::uint8_t>;

namespace {

constexpr std::uint64_t kAt = 0x401000;

bool has(const std::vector<std::uint64_t>& v, std::uint64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

tpagent::arch::Relocated five_bytes_of(const Bytes& code) {
    auto r = x86::relocate(code, kAt, 0x500000, 5);
    REQUIRE(r);
    return *r;
}

} // namespace

TEST_CASE("the sweep finds branch and call targets, computed code addresses and table bases",
          "[arch][code_references]") {
    const Bytes code = {
        0x74, 0x02,                               // 401000: je 401004
        0xeb, 0xfc,                               // 401002: jmp 401000
        0xe8, 0x10, 0x00, 0x00, 0x00,             // 401004: call 401019
        0x48, 0x8d, 0x05, 0x20, 0x00, 0x00, 0x00, // 401009: lea rax, [rip+0x20] (401030)
        0x48, 0x8b, 0x0d, 0x00, 0x10, 0x00, 0x00, // 401010: mov rcx, [rip+0x1000] (402017)
        0xff, 0x24, 0xc5, 0x00, 0x20, 0x60, 0x00, // 401017: jmp [rax*8+0x602000]
    };
    tpagent::arch::CodeReferences refs;
    x86::sweep_code_references(code, kAt, refs);
    CHECK(has(refs.targets, 0x401004));
    CHECK(has(refs.targets, 0x401000));
    CHECK(has(refs.targets, 0x401019));
    CHECK(has(refs.targets, 0x401030)); // lea: an address the code may jump to later
    CHECK_FALSE(has(refs.targets, 0x402017));
    CHECK(has(refs.tables, 0x401030));
    CHECK(has(refs.tables, 0x402017));
    CHECK(has(refs.tables, 0x602000)); // non-PIC jump table
}

TEST_CASE("the sweep steps over bytes that do not decode", "[arch][code_references]") {
    const Bytes code = {0x06, 0x74, 0x00}; // (invalid in 64-bit mode) je +0
    tpagent::arch::CodeReferences refs;
    x86::sweep_code_references(code, kAt, refs);
    CHECK(has(refs.targets, 0x401003));
}

TEST_CASE("displaced instructions must each fall through to the next", "[arch][code_references]") {
    SECTION("straight-line code moves") {
        const Bytes code = {0x55, 0x48, 0x89, 0xe5, 0x41, 0x57}; // push rbp; mov rbp,rsp; push r15
        auto r = five_bytes_of(code);
        CHECK(r.covered == 6);
        CHECK_FALSE(x86::displacement_hazard(code, kAt, r));
    }
    SECTION("a conditional branch before the last one is fine") {
        const Bytes code = {0x85, 0xff, 0x7e, 0x10, 0x31, 0xc0}; // test edi,edi; jle; xor eax,eax
        auto r = five_bytes_of(code);
        CHECK(r.covered == 6);
        CHECK_FALSE(x86::displacement_hazard(code, kAt, r));
    }
    SECTION("a return followed by padding only moves: the padding never runs") {
        const Bytes code = {0x89, 0xf8, 0xc3, 0xcc, 0x66, 0x90}; // mov eax,edi; ret; int3; nop
        auto r = five_bytes_of(code);
        CHECK(r.covered == 6);
        CHECK_FALSE(x86::displacement_hazard(code, kAt, r));
    }
    SECTION("a return with code after it is refused") {
        const Bytes code = {0x89, 0xf8, 0xc3, 0x31, 0xc0, 0x90}; // mov eax,edi; ret; xor; nop
        auto r = five_bytes_of(code);
        auto why = x86::displacement_hazard(code, kAt, r);
        REQUIRE(why);
        CHECK(why->find("a return at 0x401002") != std::string::npos);
    }
    SECTION("a jump before the last is refused") {
        const Bytes code = {0xeb, 0x10, 0x31, 0xc0, 0x90, 0x90}; // jmp +0x10; xor; nops
        auto r = five_bytes_of(code);
        auto why = x86::displacement_hazard(code, kAt, r);
        REQUIRE(why);
        CHECK(why->find("a jump") != std::string::npos);
    }
    SECTION("a call before the last moves: its relocated form returns into the pad") {
        const Bytes code = {0xff, 0xd0, 0x31, 0xc0, 0x90, 0x90}; // call rax; xor eax,eax; nops
        auto r = five_bytes_of(code);
        CHECK(r.covered == 5);
        CHECK_FALSE(x86::displacement_hazard(code, kAt, r));
    }
    SECTION("ud2 before the last is refused") {
        const Bytes code = {0x0f, 0x0b, 0x90, 0x90, 0x90, 0x90};
        auto r = five_bytes_of(code);
        CHECK(x86::displacement_hazard(code, kAt, r));
    }
    SECTION("the last instruction may be anything") {
        const Bytes code = {0x48, 0x83, 0xc4, 0x08, 0xc3}; // add rsp,8; ret
        auto r = five_bytes_of(code);
        CHECK(r.covered == 5);
        CHECK_FALSE(x86::displacement_hazard(code, kAt, r));
    }
}

TEST_CASE("a call displaced before the last is named for runtimes that walk their stacks",
          "[arch][code_references]") {
    SECTION("call rax; xor eax,eax: the callee would return into the pad") {
        const Bytes code = {0xff, 0xd0, 0x31, 0xc0, 0x90, 0x90};
        auto why = x86::displaced_call(code, kAt, five_bytes_of(code));
        REQUIRE(why);
        CHECK(why->find("a call at 0x401000") != std::string::npos);
    }
    SECTION("a call as the last one returns to the code after the jump") {
        const Bytes code = {0x31, 0xc0, 0xe8, 0x00, 0x01, 0x00, 0x00}; // xor; call +0x100
        auto r = five_bytes_of(code);
        CHECK(r.covered == 7);
        CHECK_FALSE(x86::displaced_call(code, kAt, r));
    }
    SECTION("no call") {
        const Bytes code = {0x55, 0x48, 0x89, 0xe5, 0x41, 0x57};
        CHECK_FALSE(x86::displaced_call(code, kAt, five_bytes_of(code)));
    }
}

TEST_CASE("the sweep lists the direct calls to a function whose call sites are resumed at",
          "[arch][code_references]") {
    // call 0x401100; nop; call 0x401200; call *rax
    const Bytes code = {0xe8, 0xfb, 0x00, 0x00, 0x00, 0x90, 0xe8,
                        0xf5, 0x01, 0x00, 0x00, 0xff, 0xd0};
    tpagent::arch::CodeReferences refs;
    refs.resumed_at_calls_to = 0x401200;
    x86::sweep_code_references(code, kAt, refs);
    CHECK(refs.resumed_calls == std::vector<std::uint64_t>{0x401006});
    tpagent::arch::CodeReferences none;
    x86::sweep_code_references(code, kAt, none);
    CHECK(none.resumed_calls.empty());
}
