// Any bytes through the validator; whatever it accepts through the disassembler and the
// interpreter. Must never crash, read out of bounds, hit UB, or run unbounded.
#include "bytecode/disassembler.hpp"
#include "bytecode/interpreter.hpp"
#include "bytecode/program.hpp"
#include "tests/unit/bytecode/fake_target.hpp"
#include <cstdint>
#include <cstdlib>
#include <span>

using namespace tpagent::bytecode;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const testing::FakeTarget target = [] {
        testing::FakeTarget t;
        std::vector<std::uint8_t> mem(256);
        for (unsigned i = 0; i < mem.size(); ++i)
            mem[i] = static_cast<std::uint8_t>(i * 7);
        mem[40] = 0;
        t.map(0x100, mem);
        for (unsigned r = 0; r < 24; ++r)
            t.registers[r] = 0x100 + r * 8;
        for (unsigned v = 0; v < 4; ++v)
            t.tsvs[v] = v;
        return t;
    }();
    Limits limits;
    limits.max_backward_jumps = 200;
    auto program = validate(std::span(data, size), 58, limits);
    const std::string text = program ? disassemble(*program) : disassemble(std::span(data, size));
    if (!program) return 0;
    if (text.empty()) std::abort(); // a valid program has at least `end`
    testing::FakeTarget t = target;
    Context c = t.context();
    EvalOut out;
    run(*program, c, out);
    auto& [start, bytes] = *t.memory.begin();
    c.set_direct_window(start, bytes.data(), bytes.size());
    run(*program, c, out);
    return 0;
}
