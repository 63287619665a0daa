// Branch trace (gdb's `record btrace`), as the server and a target speak of it: a thread's
// recording, configured by Qbtrace/Qbtrace-conf and read by qXfer:btrace(-conf):read.
#pragma once
#include <cstdint>
#include <string>

namespace tpagent::process {

enum class BranchTraceFormat { Bts, Pt };

// qXfer:btrace:read's annexes (GDB manual, "General Query Packets").
enum class BranchTraceRead {
    All,   // everything the ring holds
    New,   // everything, if anything was recorded since the last read; else no block
    Delta, // what was recorded since the last read, with a block from 0 for gdb to stitch
};

// Instructions begin..end (both included: end is the last one's address) ran in sequence.
struct BranchBlock {
    std::uint64_t begin = 0, end = 0;
    bool operator==(const BranchBlock&) const = default;
};

// How the software recorder runs a recorded thread from branch to branch.
enum class BranchStepMethod {
    BlockEnds,   // a breakpoint at the next branch, then a step over it (one thread only)
    BlockSteps,  // the CPU's step to the next taken branch (x86 BTF; else single steps)
    SingleSteps, // one instruction at a time
};

struct BranchTraceConfig {
    BranchTraceFormat format = BranchTraceFormat::Bts;
    std::uint32_t size = 0; // the ring's size in bytes, as obtained
    std::string backend;    // how it is recorded, for people: "software, single-step", ...
    // So far: branches recorded, and (software) the steps the thread made and how many of
    // them stopped after a taken branch (a block step that stops after each instruction is
    // one the CPU does not honour).
    std::uint64_t branches = 0, steps = 0, steps_to_branch = 0;
};

} // namespace tpagent::process
