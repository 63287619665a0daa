// What --relocate-with-gdb checks gdb's qRelocInsn work with: the addresses an instruction's
// pc-relative operands reach, before and after relocation, and the pad's jump back.
#include "arch/arch.hpp"
#include "arch/relocation.hpp"
#include "arch/x86_64/relocator.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

namespace x86 = tpagent::arch::x86_64;
using Bytes = std::vector<std::uint8_t>;
using Targets = std::vector<std::uint64_t>;

namespace {

constexpr std::uint64_t kFrom = 0x555555555000; // the original instruction
constexpr std::uint64_t kTo = 0x555575555000;   // its place in a pad

void put32(Bytes& b, std::size_t at, std::int64_t v) {
    const auto u = static_cast<std::uint32_t>(static_cast<std::int32_t>(v));
    for (int k = 0; k < 4; ++k)
        b[at + k] = static_cast<std::uint8_t>(u >> (8 * k));
}

Targets targets(const Bytes& code, std::uint64_t at) {
    auto t = x86::pc_relative_targets(code, at);
    REQUIRE(t.ok());
    return *t;
}

} // namespace

TEST_CASE("pc_relative_targets: none in plain instructions", "[relocinsn]") {
    CHECK(targets({0x31, 0xc0, 0x48, 0x89, 0xe5, 0x50}, kFrom).empty()); // xor; mov; push
    CHECK(targets({}, kFrom).empty());
}

TEST_CASE("pc_relative_targets: a rip-relative operand re-aimed reaches the same data",
          "[relocinsn]") {
    Bytes original = {0x8b, 0x05, 0x10, 0x00, 0x00, 0x00}; // mov eax, [rip+0x10]
    CHECK(targets(original, kFrom) == Targets{kFrom + 6 + 0x10});
    Bytes moved = original;
    put32(moved, 2, static_cast<std::int64_t>(kFrom + 6 + 0x10 - (kTo + 6)));
    CHECK(targets(moved, kTo) == targets(original, kFrom));
    CHECK(targets(original, kTo) != targets(original, kFrom)); // copied unchanged: astray
}

TEST_CASE("pc_relative_targets: gdb's call as push + jmp reaches the callee", "[relocinsn]") {
    const std::uint64_t callee = kFrom + 0x2000;
    Bytes call = {0xe8, 0, 0, 0, 0};
    put32(call, 1, static_cast<std::int64_t>(callee - (kFrom + 5)));
    CHECK(targets(call, kFrom) == Targets{callee});
    // amd64_relocate_instruction for a return address above 2 GiB: sub rsp, 8; two movl to
    // [rsp], [rsp+4]; jmp rel32 to the callee.
    Bytes gdb = {0x48, 0x83, 0xec, 0x08, 0xc7, 0x04, 0x24, 0x05, 0x50, 0x55, 0x55, 0xc7,
                 0x44, 0x24, 0x04, 0x55, 0x55, 0x00, 0x00, 0xe9, 0,    0,    0,    0};
    put32(gdb, 20, static_cast<std::int64_t>(callee - (kTo + gdb.size())));
    CHECK(targets(gdb, kTo) == Targets{callee});
}

TEST_CASE("pc_relative_targets: a short branch copied as is goes astray", "[relocinsn]") {
    const Bytes jne = {0x75, 0x10};
    CHECK(targets(jne, kFrom) == Targets{kFrom + 0x12});
    CHECK(targets(jne, kTo) == Targets{kTo + 0x12});
}

TEST_CASE("pc_relative_targets: bytes that are not whole instructions", "[relocinsn]") {
    auto t = x86::pc_relative_targets(Bytes{0x8b, 0x05, 0x10}, kFrom);
    REQUIRE_FALSE(t.ok());
    CHECK(t.error().code == tpagent::ErrorCode::Unsupported);
}

TEST_CASE("encode_pad_jump: jmp rel32 back to the code, refused beyond reach", "[relocinsn]") {
    const auto& arch = tpagent::arch::host_architecture();
    auto jump = arch.encode_pad_jump(kTo, kFrom + 6);
    REQUIRE(jump.ok());
    REQUIRE(jump->size() == 5);
    CHECK((*jump)[0] == 0xe9);
    CHECK(targets(*jump, kTo) == Targets{kFrom + 6});
    CHECK(arch.pc_relative_targets(*jump, kTo).ok());
    CHECK_FALSE(arch.encode_pad_jump(kTo, kTo + (std::uint64_t{1} << 32)).ok());
}

TEST_CASE("relocation_mismatch: the same targets, none inside the displaced bytes", "[relocinsn]") {
    using tpagent::arch::relocation_mismatch;
    const std::uint64_t site = kFrom;
    const Targets none, data = {kFrom + 0x3000}, call = {kFrom + 0x2000};
    CHECK_FALSE(relocation_mismatch(none, none, site, 6));
    CHECK_FALSE(relocation_mismatch(data, data, site, 6));
    CHECK_FALSE(relocation_mismatch(Targets{site}, Targets{site}, site, 6)); // the tracepoint
    CHECK_FALSE(relocation_mismatch(Targets{site + 6}, Targets{site + 6}, site, 6)); // just after

    auto astray = relocation_mismatch(Targets{kFrom + 0x12}, Targets{kTo + 0x12}, site, 5);
    REQUIRE(astray);
    CHECK(astray->find("0x555575555012") != std::string::npos);
    CHECK(astray->find("0x555555555012") != std::string::npos);
    CHECK(relocation_mismatch(call, none, site, 5)); // a target lost
    CHECK(relocation_mismatch(none, call, site, 5)); // one made up
    CHECK(relocation_mismatch(call, Targets{kFrom + 0x2000, kFrom + 0x2000}, site, 5));
    auto inside = relocation_mismatch(Targets{site + 3}, Targets{site + 3}, site, 8);
    REQUIRE(inside);
    CHECK(inside->find("inside") != std::string::npos);
}
