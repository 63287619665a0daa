// The target that random programs run against: the memory image of random_program.hpp,
// ten registers and three trace state variables (number 3 does not exist).
#pragma once
#include "fake_target.hpp"
#include "random_program.hpp"

namespace tpagent::bytecode::testing {

template <typename Chooser> FakeTarget random_target(Chooser& c) {
    FakeTarget t;
    std::vector<std::uint8_t> mem(kRandomMemorySize);
    for (auto& b : mem)
        b = static_cast<std::uint8_t>(c.pick(4) == 0 ? 0 : c.value());
    t.map(kRandomMemoryBase, mem);
    for (unsigned r = 0; r < 10; ++r)
        t.registers[r] = c.value();
    for (unsigned v = 0; v < 3; ++v)
        t.tsvs[v] = static_cast<std::int64_t>(c.value());
    return t;
}

} // namespace tpagent::bytecode::testing
