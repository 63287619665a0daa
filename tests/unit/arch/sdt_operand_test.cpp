// SDT marker arguments: the operand forms compilers write into `.note.stapsdt` (x86-64 from
// GCC's "nor" constraint, AArch64 likewise), decoded into where each value is, and evaluated.
#include "arch/aarch64/sdt_operand.hpp"
#include "arch/arch.hpp"
#include "arch/x86_64/sdt_operand.hpp"
#include <catch2/catch.hpp>
#include <cstring>
#include <map>

using namespace tpagent::arch;
using Kind = SdtArgument::Kind;

namespace {

std::optional<std::uint64_t> symbols(std::string_view name) {
    if (name == "counter") return 0x601040;
    if (name == "_ZL5table") return 0x602000;
    return std::nullopt;
}

} // namespace

TEST_CASE("x86-64 SDT operands: registers, immediates, memory", "[arch][sdt]") {
    auto reg = x86_64::parse_sdt_operand("%eax", symbols);
    CHECK(reg.kind == Kind::Register);
    CHECK(reg.base == 0);
    CHECK(reg.shift == 0);
    CHECK(x86_64::parse_sdt_operand("%r12d", symbols).base == 12);
    CHECK(x86_64::parse_sdt_operand("%sil", symbols).base == 4);
    CHECK(x86_64::parse_sdt_operand("%rsp", symbols).base == 7);
    const auto ah = x86_64::parse_sdt_operand("%ah", symbols);
    CHECK(ah.base == 0);
    CHECK(ah.shift == 8);

    const auto imm = x86_64::parse_sdt_operand("$-7", symbols);
    CHECK(imm.kind == Kind::Constant);
    CHECK(imm.offset == -7);
    CHECK(x86_64::parse_sdt_operand("$0x10", symbols).offset == 16);
    CHECK(x86_64::parse_sdt_operand("$counter", symbols).offset == 0x601040);

    const auto local = x86_64::parse_sdt_operand("-20(%rbp)", symbols);
    CHECK(local.kind == Kind::Memory);
    CHECK(local.base == 6);
    CHECK(local.index == -1);
    CHECK(local.offset == -20);

    const auto indexed = x86_64::parse_sdt_operand("8(%rax,%rbx,4)", symbols);
    CHECK(indexed.kind == Kind::Memory);
    CHECK(indexed.base == 0);
    CHECK(indexed.index == 1);
    CHECK(indexed.scale == 4);
    CHECK(indexed.offset == 8);

    const auto no_base = x86_64::parse_sdt_operand("(,%rcx,8)", symbols);
    CHECK(no_base.kind == Kind::Memory);
    CHECK(no_base.base == -1);
    CHECK(no_base.index == 2);

    // Position-independent code names a global through rip: its address is the symbol's.
    const auto global = x86_64::parse_sdt_operand("counter(%rip)", symbols);
    CHECK(global.kind == Kind::Memory);
    CHECK(global.base == -1);
    CHECK(global.offset == 0x601040);
    CHECK(x86_64::parse_sdt_operand("_ZL5table+8(%rip)", symbols).offset == 0x602008);
    CHECK(x86_64::parse_sdt_operand("0x601040", symbols).offset == 0x601040);
}

TEST_CASE("x86-64 SDT operands tpagent cannot place are Unknown", "[arch][sdt]") {
    for (const char* bad : {"", "%xmm0", "%fs:8", "missing(%rip)", "16(%rip)", "(%rax",
                            "8(%rax,%rsp,2)", "8(%rax,%rbx,3)", "$", "%", "1(%rax,%rbx,2,4)"})
        CHECK(x86_64::parse_sdt_operand(bad, symbols).kind == Kind::Unknown);
}

TEST_CASE("AArch64 SDT operands", "[arch][sdt]") {
    const auto w = aarch64::parse_sdt_operand("w1", symbols);
    CHECK(w.kind == Kind::Register);
    CHECK(w.base == 1);
    CHECK(aarch64::parse_sdt_operand("x30", symbols).base == 30);
    CHECK(aarch64::parse_sdt_operand("sp", symbols).base == 31);
    const auto mem = aarch64::parse_sdt_operand("[sp, 16]", symbols);
    CHECK(mem.kind == Kind::Memory);
    CHECK(mem.base == 31);
    CHECK(mem.offset == 16);
    CHECK(aarch64::parse_sdt_operand("[x29, #-8]", symbols).offset == -8);
    CHECK(aarch64::parse_sdt_operand("[x0]", symbols).offset == 0);
    CHECK(aarch64::parse_sdt_operand("#5", symbols).offset == 5);
    CHECK(aarch64::parse_sdt_operand("-3", symbols).offset == -3);
    for (const char* bad : {"x31", "v0", "[x0, x1", "[q0]", "#"})
        CHECK(aarch64::parse_sdt_operand(bad, symbols).kind == Kind::Unknown);
}

TEST_CASE("an argument string: sizes, signs, and one record per argument", "[arch][sdt]") {
    const auto args = parse_sdt_arguments("-4@%eax  8@%rdx -1@$7 3@%eax 4@%xmm0 %rbx",
                                          host_architecture(), symbols);
    REQUIRE(args.size() == 6);
    CHECK(args[0].size == 4);
    CHECK(args[0].is_signed);
    CHECK(args[1].size == 8);
    CHECK_FALSE(args[1].is_signed);
    CHECK(args[2].kind == Kind::Constant);
    CHECK(args[2].size == 1);
    CHECK(args[3].kind == Kind::Unknown);  // no such size
    CHECK(args[4].kind == Kind::Unknown);  // a vector register
    CHECK(args[5].kind == Kind::Register); // the first note version: no size, a long
    CHECK(args[5].size == 8);
    CHECK(parse_sdt_arguments("", host_architecture(), symbols).empty());
}

TEST_CASE("an argument's value: extended from its size, read where it is", "[arch][sdt]") {
    std::map<int, std::uint64_t> regs{{0, 0xffffffff'fffffffe}, {6, 0x1000}};
    std::map<std::uint64_t, std::uint8_t> memory{{0x0fec, 0x80}, {0x0fed, 0xff}};
    auto read_register = [&](int r, std::uint64_t* v) {
        auto it = regs.find(r);
        if (it == regs.end()) return false;
        *v = it->second;
        return true;
    };
    auto read_memory = [&](std::uint64_t at, void* out, unsigned size) {
        for (unsigned i = 0; i < size; ++i) {
            auto it = memory.find(at + i);
            if (it == memory.end()) return false;
            static_cast<std::uint8_t*>(out)[i] = it->second;
        }
        return true;
    };
    std::uint64_t v = 0;
    SdtArgument eax{Kind::Register, 4, true};
    eax.base = 0;
    REQUIRE(sdt_argument_value(eax, read_register, read_memory, &v));
    CHECK(static_cast<std::int64_t>(v) == -2);
    eax.is_signed = false;
    REQUIRE(sdt_argument_value(eax, read_register, read_memory, &v));
    CHECK(v == 0xfffffffe);
    SdtArgument ah{Kind::Register, 1, false, 8};
    ah.base = 0;
    REQUIRE(sdt_argument_value(ah, read_register, read_memory, &v));
    CHECK(v == 0xff);

    SdtArgument local{Kind::Memory, 2, true};
    local.base = 6;
    local.offset = -20;
    REQUIRE(sdt_argument_value(local, read_register, read_memory, &v));
    CHECK(static_cast<std::int64_t>(v) == -128);
    local.offset = -16; // not mapped
    CHECK_FALSE(sdt_argument_value(local, read_register, read_memory, &v));
    SdtArgument unknown;
    CHECK_FALSE(sdt_argument_value(unknown, read_register, read_memory, &v));
    local.base = 3; // not readable
    CHECK_FALSE(sdt_argument_value(local, read_register, read_memory, &v));
}
