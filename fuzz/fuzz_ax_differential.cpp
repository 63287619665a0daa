// Compiled code must behave exactly like the interpreter: same status, value, fault
// location, collected ranges, variable updates and printf output. The input either drives
// the random program generator (always valid programs) or is taken as raw bytecode.
#include "bytecode/compiler.hpp"
#include "arch/compiler_backend.hpp"
#include "bytecode/interpreter.hpp"
#include "bytecode/program.hpp"
#include "tests/unit/bytecode/fake_target.hpp"
#include "tests/unit/bytecode/random_program.hpp"
#include "tests/unit/bytecode/random_target.hpp"
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

using namespace tpagent::bytecode;
using namespace tpagent::bytecode::testing;

namespace {

// Choices read from the fuzzer's bytes; zeros once they run out.
struct ByteChooser {
    const std::uint8_t* p;
    std::size_t n;
    unsigned pick(unsigned range) {
        const unsigned v = n ? *p++ : 0;
        if (n) --n;
        return v % range;
    }
    std::uint64_t value() {
        std::uint64_t v = 0;
        for (int i = 0; i < 8; ++i)
            v = v << 8 | pick(256);
        return v;
    }
};

void compare(const Program& program, const FakeTarget& target) {
    auto compiled = tpagent::arch::compile_for_host(program);
    if (!compiled) std::abort();
    for (bool window : {false, true}) {
        const Outcome a = interpret(program, target, window);
        const Outcome b = execute(*compiled, target, window);
        if (!(a == b)) {
            std::fprintf(stderr, "mismatch: interpreter status %u value %llx, compiled %u %llx\n",
                         static_cast<unsigned>(a.status), static_cast<unsigned long long>(a.value),
                         static_cast<unsigned>(b.status), static_cast<unsigned long long>(b.value));
            std::abort();
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    Limits limits;
    limits.max_backward_jumps = 100;
    ByteChooser chooser{data + 1, size - 1};
    if (data[0] & 1) { // raw bytecode
        auto program = validate(std::span(data + 1, size - 1), 58, limits);
        if (!program) return 0;
        ByteChooser image_source{data, size};
        compare(*program, random_target(image_source));
        return 0;
    }
    RandomProgram<ByteChooser> gen(chooser);
    const std::vector<std::uint8_t> bytes = gen.make();
    auto program = validate(bytes, 58, limits);
    if (!program) { // the generator only makes valid programs
        std::fprintf(stderr, "generated program rejected: %s\n", program.error().text.c_str());
        std::abort();
    }
    compare(*program, random_target(chooser));
    return 0;
}
