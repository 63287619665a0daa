// A target for tests: memory regions, registers and trace state variables held in maps;
// records what the expression collects and prints.
#pragma once
#include "bytecode/compiler.hpp"
#include "bytecode/context.hpp"
#include "bytecode/interpreter.hpp"
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tpagent::bytecode::testing {

struct FakeTarget {
    std::map<std::uint64_t, std::vector<std::uint8_t>> memory; // start -> bytes
    std::map<unsigned, std::uint64_t> registers;
    std::map<unsigned, std::int64_t> tsvs;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> collected; // (addr, len)
    std::vector<std::pair<unsigned, std::int64_t>> collected_tsvs;
    std::string printed;
    bool refuse_collection = false;

    void map(std::uint64_t addr, std::vector<std::uint8_t> bytes) {
        memory[addr] = std::move(bytes);
    }
    void poke64(std::uint64_t addr, std::uint64_t v) {
        for (auto& [start, bytes] : memory)
            if (addr >= start && addr + 8 <= start + bytes.size()) {
                std::memcpy(&bytes[addr - start], &v, 8);
                return;
            }
    }

    static bool read(void* u, std::uint64_t addr, void* out, std::size_t len) {
        auto* t = static_cast<FakeTarget*>(u);
        for (auto& [start, bytes] : t->memory)
            if (addr >= start && addr - start <= bytes.size() &&
                len <= bytes.size() - (addr - start)) {
                std::memcpy(out, &bytes[addr - start], len);
                return true;
            }
        return false;
    }
    static bool reg(void* u, unsigned n, std::uint64_t* v) {
        auto* t = static_cast<FakeTarget*>(u);
        auto it = t->registers.find(n);
        if (it == t->registers.end()) return false;
        *v = it->second;
        return true;
    }
    static bool getv(void* u, unsigned n, std::int64_t* v) {
        auto* t = static_cast<FakeTarget*>(u);
        auto it = t->tsvs.find(n);
        if (it == t->tsvs.end()) return false;
        *v = it->second;
        return true;
    }
    static bool setv(void* u, unsigned n, std::int64_t v) {
        auto* t = static_cast<FakeTarget*>(u);
        if (!t->tsvs.count(n)) return false;
        t->tsvs[n] = v;
        return true;
    }
    static bool collect(void* u, std::uint64_t addr, std::uint64_t len) {
        auto* t = static_cast<FakeTarget*>(u);
        if (t->refuse_collection) return false;
        t->collected.emplace_back(addr, len);
        return true;
    }
    static bool collect_tsv(void* u, unsigned n, std::int64_t v) {
        static_cast<FakeTarget*>(u)->collected_tsvs.emplace_back(n, v);
        return true;
    }
    static bool print(void* u, const char* s, std::size_t n) {
        static_cast<FakeTarget*>(u)->printed.append(s, n);
        return true;
    }

    Context context() {
        Context c;
        c.user = this;
        c.read_memory = &read;
        c.read_register = &reg;
        c.get_tsv = &getv;
        c.set_tsv = &setv;
        c.collect_memory = &collect;
        c.collect_tsv = &collect_tsv;
        c.print = &print;
        return c;
    }
};

// The outcome of one evaluation, comparable between interpreter and compiled code.
struct Outcome {
    EvalStatus status = EvalStatus::Ok;
    std::uint64_t value = 0, fault_address = 0;
    std::uint32_t fault_offset = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> collected;
    std::vector<std::pair<unsigned, std::int64_t>> collected_tsvs;
    std::map<unsigned, std::int64_t> tsvs;
    std::string printed;

    bool operator==(const Outcome&) const = default;
};

template <typename Runner> Outcome run_on(FakeTarget target, Runner&& runner, bool window = false) {
    Context c = target.context();
    if (window && !target.memory.empty()) {
        auto& [start, bytes] = *target.memory.begin();
        c.set_direct_window(start, bytes.data(), bytes.size());
    }
    EvalOut out;
    Outcome o;
    o.status = runner(c, out);
    if (o.status == EvalStatus::Ok) {
        o.value = out.value;
    } else {
        o.fault_address = out.fault_address;
        o.fault_offset = out.fault_offset;
    }
    o.collected = target.collected;
    o.collected_tsvs = target.collected_tsvs;
    o.tsvs = target.tsvs;
    o.printed = target.printed;
    return o;
}

inline Outcome interpret(const Program& p, const FakeTarget& t, bool window = false) {
    return run_on(
        t, [&](const Context& c, EvalOut& out) { return run(p, c, out); }, window);
}
inline Outcome execute(const CompiledProgram& p, const FakeTarget& t, bool window = false) {
    return run_on(
        t, [&](const Context& c, EvalOut& out) { return p.run(c, out); }, window);
}

} // namespace tpagent::bytecode::testing
