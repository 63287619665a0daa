// What a sweep of a module's code finds that can send control into the middle of it: the
// evidence a fast tracepoint needs before its jump displaces instructions after the one at its
// address (x86-64, an instruction shorter than the jump). ISA-neutral shape; each ISA fills it.
#pragma once
#include <cstdint>
#include <vector>

namespace tpagent::arch {

struct CodeReferences {
    // Direct branch and call targets, and code addresses the code computes (pc-relative
    // `lea`): places control can arrive at from elsewhere.
    std::vector<std::uint64_t> targets;
    // Data addresses the code reaches (pc-relative operands, absolute displacements of indexed
    // operands): where a jump table may start. The caller reads them, knowing which memory is
    // data.
    std::vector<std::uint64_t> tables;
    // A function whose call sites are themselves places control arrives at (Go's
    // runtime.deferreturn: a recovered panic resumes its frame at that call), 0: none; and
    // the sites of the direct calls to it the sweep found.
    std::uint64_t resumed_at_calls_to = 0;
    std::vector<std::uint64_t> resumed_calls;
};

} // namespace tpagent::arch
