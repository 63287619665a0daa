// ns per evaluation of typical tracepoint conditions, interpreted and compiled, with
// memory read through the callback or through the direct-load window.
#include "bytecode/compiler.hpp"
#include "arch/compiler_backend.hpp"
#include "bytecode/interpreter.hpp"
#include "bytecode/program.hpp"
#include <benchmark/benchmark.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace tpagent::bytecode;

namespace {

struct Node {
    Node* next;
    int value;
};
struct Rec {
    long pad;
    int field;
};

// The "traced program's" data, all inside one arena so it can be the direct window.
struct Arena {
    int x = 7;
    Rec rec{0, 42};
    Rec* prec = &rec;
    Node nodes[5];
    Node* head = &nodes[0];
    Arena() {
        for (int i = 0; i < 5; ++i)
            nodes[i] = Node{i < 4 ? &nodes[i + 1] : nullptr, i};
    }
};
Arena arena;

std::uint64_t addr(const void* p) {
    return reinterpret_cast<std::uintptr_t>(p);
}

struct Code {
    std::vector<std::uint8_t> b;
    Code& op(Op o) {
        b.push_back(static_cast<std::uint8_t>(o));
        return *this;
    }
    Code& u(std::uint64_t v, unsigned n) {
        for (unsigned i = n; i-- > 0;)
            b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
        return *this;
    }
    Code& k64(std::uint64_t v) { return op(Op::Const64).u(v, 8); }
    Code& k8(std::uint8_t v) { return op(Op::Const8).u(v, 1); }
    Code& ext(unsigned bits) { return op(Op::Ext).u(bits, 1); }
    std::vector<std::uint8_t> end() { return op(Op::End).b; }
};

// As gdb compiles them (addresses as const64: the bench is a PIE).
std::vector<std::uint8_t> x_mod_2_eq_0() { // x % 2 == 0
    Code c;
    c.k64(addr(&arena.x)).op(Op::Ref32).ext(32);
    return c.k8(2).op(Op::RemSigned).ext(32).k8(0).op(Op::Equal).end();
}
std::vector<std::uint8_t> field_compare() { // prec->field == 42
    Code c;
    c.k64(addr(&arena.prec)).op(Op::Ref64).k8(offsetof(Rec, field)).op(Op::Add);
    return c.op(Op::Ref32).ext(32).k8(42).op(Op::Equal).end();
}
std::vector<std::uint8_t> pointer_chase() { // head->next->next->next->next->value
    Code c;
    c.k64(addr(&arena.head)).op(Op::Ref64);
    for (int i = 0; i < 4; ++i)
        c.op(Op::Ref64);
    return c.k8(offsetof(Node, value)).op(Op::Add).op(Op::Ref32).ext(32).end();
}

// What an in-process agent's read callback does: check the range is known readable, copy.
bool read_checked(void*, std::uint64_t a, void* out, std::size_t len) {
    const std::uint64_t lo = addr(&arena), hi = lo + sizeof arena;
    if (a < lo || a > hi || len > hi - a) return false;
    std::memcpy(out, reinterpret_cast<const void*>(a), len);
    return true;
}

Context make_context(bool window) {
    Context c;
    c.read_memory = &read_checked;
    if (window) c.set_direct_window(addr(&arena), &arena, sizeof arena);
    return c;
}

Program must(std::vector<std::uint8_t> bytes) {
    auto p = validate(bytes, 58);
    if (!p) std::abort();
    return std::move(*p);
}

template <std::vector<std::uint8_t> (*Make)()> void interpreted(benchmark::State& state) {
    const Program p = must(Make());
    const Context c = make_context(state.range(0));
    EvalOut out;
    for (auto _ : state) {
        run(p, c, out);
        benchmark::DoNotOptimize(out.value);
    }
}

template <std::vector<std::uint8_t> (*Make)()> void compiled(benchmark::State& state) {
    const Program p = must(Make());
    auto code = tpagent::arch::compile_for_host(p);
    if (!code) std::abort();
    const Context c = make_context(state.range(0));
    EvalOut out;
    for (auto _ : state) {
        code->run(c, out);
        benchmark::DoNotOptimize(out.value);
    }
}

} // namespace

// Argument: 0 = memory through the read callback, 1 = direct-load window.
BENCHMARK(interpreted<x_mod_2_eq_0>)->ArgName("window")->Arg(0)->Arg(1);
BENCHMARK(compiled<x_mod_2_eq_0>)->ArgName("window")->Arg(0)->Arg(1);
BENCHMARK(interpreted<field_compare>)->ArgName("window")->Arg(0)->Arg(1);
BENCHMARK(compiled<field_compare>)->ArgName("window")->Arg(0)->Arg(1);
BENCHMARK(interpreted<pointer_chase>)->ArgName("window")->Arg(0)->Arg(1);
BENCHMARK(compiled<pointer_chase>)->ArgName("window")->Arg(0)->Arg(1);

BENCHMARK_MAIN();
