// Builds agent-expression bytes for tests: Ax().k(7).k(2).op(Op::RemSigned).end().
#pragma once
#include "bytecode/opcodes.hpp"
#include "arch/compiler_backend.hpp"
#include "bytecode/program.hpp"
#include "bytecode/compiler.hpp"
#include "bytecode/interpreter.hpp"
#include "fake_target.hpp"
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace tpagent::bytecode::testing {

struct Ax {
    std::vector<std::uint8_t> b;

    Ax& op(Op o) { return raw(static_cast<std::uint8_t>(o)); }
    Ax& raw(std::uint8_t v) {
        b.push_back(v);
        return *this;
    }
    Ax& be(std::uint64_t v, unsigned n) {
        for (unsigned i = n; i-- > 0;)
            b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
        return *this;
    }
    Ax& op1(Op o, std::uint64_t v) { return op(o).be(v, 1); }
    Ax& op2(Op o, std::uint64_t v) { return op(o).be(v, 2); }
    // Smallest const opcode holding v.
    Ax& k(std::uint64_t v) {
        if (v <= 0xff) return op(Op::Const8).be(v, 1);
        if (v <= 0xffff) return op(Op::Const16).be(v, 2);
        if (v <= 0xffffffff) return op(Op::Const32).be(v, 4);
        return op(Op::Const64).be(v, 8);
    }
    Ax& ext(unsigned n) { return op1(Op::Ext, n); }
    Ax& reg(unsigned n) { return op2(Op::Reg, n); }
    Ax& go(Op o, std::uint16_t to) { return op2(o, to); }
    Ax& printf(unsigned nargs, const std::string& format) {
        op(Op::Printf).be(nargs, 1).be(format.size() + 1, 2);
        for (char c : format)
            b.push_back(static_cast<std::uint8_t>(c));
        b.push_back(0);
        return *this;
    }
    Ax& end() { return op(Op::End); }
    std::size_t size() const { return b.size(); }
};

inline constexpr unsigned kRegisterCount = 58; // amd64 GNU/Linux without AVX-512

inline Program must_validate(const std::vector<std::uint8_t>& bytes, const Limits& limits = {}) {
    auto p = validate(bytes, kRegisterCount, limits);
    INFO((p ? std::string() : p.error().text));
    REQUIRE(p.ok());
    return std::move(*p);
}

// Interprets and runs compiled code, with and without the direct window, and requires all
// four outcomes to be the same. Returns that outcome.
inline Outcome run_all(const std::vector<std::uint8_t>& bytes, const FakeTarget& target,
                       const Limits& limits = {}) {
    const Program p = must_validate(bytes, limits);
    const Outcome reference = interpret(p, target);
    auto compiled = tpagent::arch::compile_for_host(p);
    REQUIRE(compiled.ok());
    CHECK(interpret(p, target, true) == reference);
    CHECK(execute(*compiled, target) == reference);
    CHECK(execute(*compiled, target, true) == reference);
    return reference;
}

inline std::uint64_t value_of(const std::vector<std::uint8_t>& bytes, const FakeTarget& t = {}) {
    const Outcome o = run_all(bytes, t);
    INFO("status " << to_string(o.status) << " at " << o.fault_offset);
    REQUIRE(o.status == EvalStatus::Ok);
    return o.value;
}

} // namespace tpagent::bytecode::testing
