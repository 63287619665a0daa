// What an agent expression (X action) records in a frame, read from its instructions: the
// facts the memory-block naming (html_memory_names) matches source items and blocks with.
#pragma once
#include "bytecode/program.hpp"
#include <cstdint>
#include <optional>
#include <vector>

namespace tpagent::tpdump {

struct ExpressionShape {
    // The bytes each trace op records, in order (nothing: computed when it runs).
    std::vector<std::optional<std::uint64_t>> traces;
    bool fixed = true;         // no branch and no tracenz: the same blocks on every run
    bool value_traced = false; // ends `const N; trace; end`: its last block is the value itself
    bool sets_variable = false;
    std::vector<std::uint32_t> traced_variables; // tracev
    // The whole expression is `const A; const N; trace; end`: N bytes at A.
    std::optional<std::uint64_t> constant_address;
};

ExpressionShape shape_of(const bytecode::Program& program);

} // namespace tpagent::tpdump
