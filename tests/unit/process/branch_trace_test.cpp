// The branch ring read as gdb's blocks (all, new, delta) and the software recorder's walk
// from where a thread was resumed to where its step stopped, over a made-up program.
#include "process/linux/branch_recorder.hpp"
#include "process/linux/branch_ring.hpp"
#include <catch2/catch.hpp>
#include <map>

using namespace tpagent;
using namespace tpagent::process;
using arch::FlowKind;
using Blocks = std::vector<BranchBlock>;

TEST_CASE("a ring read as blocks: newest first, ending at the pc", "[target][branch_trace]") {
    BranchRing ring(4 * BranchRing::kRecordBytes);
    CHECK(ring.capacity() == 4);
    CHECK(ring.read(BranchTraceRead::All, 0x100)->empty()); // the partial block is dropped
    CHECK(*ring.read(BranchTraceRead::Delta, 0x100) == Blocks{{0, 0x100}});
    ring.push(0x110, 0x200); // 0x100..0x110, then a branch to 0x200
    ring.push(0x208, 0x300);
    CHECK(*ring.read(BranchTraceRead::All, 0x304) == Blocks{{0x300, 0x304}, {0x200, 0x208}});
    CHECK(ring.read(BranchTraceRead::New, 0x304)->empty()); // nothing since
    ring.push(0x30c, 0x400);
    CHECK(*ring.read(BranchTraceRead::New, 0x404) ==
          Blocks{{0x400, 0x404}, {0x300, 0x30c}, {0x200, 0x208}});
    ring.push(0x404, 0x500);
    // A delta: what came since, and the block gdb completes from its own last pc.
    CHECK(*ring.read(BranchTraceRead::Delta, 0x510) == Blocks{{0x500, 0x510}, {0, 0x404}});
    CHECK(ring.recorded() == 4);
}

TEST_CASE("a ring keeps the newest branches; a delta past them is an overflow",
          "[target][branch_trace]") {
    BranchRing ring(2 * BranchRing::kRecordBytes);
    CHECK(ring.read(BranchTraceRead::Delta, 0x10));
    for (std::uint64_t i = 1; i <= 3; ++i)
        ring.push(i * 0x100, i * 0x100 + 0x10);
    auto delta = ring.read(BranchTraceRead::Delta, 0x999);
    REQUIRE_FALSE(delta);
    CHECK(delta.error().text == "Overflow.");
    // A refused delta leaves the next reads what they were: gdb reads new, then all.
    CHECK(ring.read(BranchTraceRead::New, 0x320)->size() == 2);
    REQUIRE(ring.read(BranchTraceRead::Delta, 0x320));
    CHECK(*ring.read(BranchTraceRead::All, 0x320) == Blocks{{0x310, 0x320}, {0x210, 0x300}});
    ring.push(0x320, 0x400);
    ring.note_lost(); // a hardware ring overran: what came before is not joined to what follows
    ring.push(0x480, 0x500);
    CHECK_FALSE(ring.read(BranchTraceRead::Delta, 0x500));
    CHECK(*ring.read(BranchTraceRead::All, 0x508) == Blocks{{0x500, 0x508}});
    CHECK(*ring.read(BranchTraceRead::Delta, 0x508) == Blocks{{0, 0x508}});
}

namespace {
// A made-up program: 0x10 mov; 0x13 jle 0x30; 0x15 call 0x40; 0x1a ret;
// 0x30 nop; 0x31 jmp 0x13; 0x40 ret. Anything else cannot be read.
struct Program {
    std::map<std::uint64_t, arch::FlowInstruction> code{
        {0x10, {3, FlowKind::Sequential, {}}}, {0x13, {2, FlowKind::Conditional, 0x30}},
        {0x15, {5, FlowKind::Call, 0x40}},     {0x1a, {1, FlowKind::Return, {}}},
        {0x30, {1, FlowKind::Sequential, {}}}, {0x31, {2, FlowKind::Jump, 0x13}},
        {0x40, {1, FlowKind::Return, {}}},
    };
    SoftwareBranchRecorder::Decode decode() {
        return [this](std::uint64_t a) -> Result<arch::FlowInstruction> {
            auto it = code.find(a);
            if (it == code.end()) return make_error(ErrorCode::MemoryAccess, "unreadable");
            return it->second;
        };
    }
};
} // namespace

TEST_CASE("single steps: a branch is a stop anywhere but the next instruction",
          "[target][branch_trace]") {
    Program p;
    BranchRing ring(1024);
    SoftwareBranchRecorder r;
    r.moved_to(0x10);
    for (std::uint64_t pc : {0x13, 0x30, 0x31, 0x13, 0x15, 0x40, 0x1a})
        r.observe(pc, false, p.decode(), ring);
    // 0x13 jle taken, 0x31 jmp, 0x13 jle not taken, 0x15 call, 0x40 ret.
    CHECK(*ring.read(BranchTraceRead::All, 0x1a) ==
          Blocks{{0x1a, 0x1a}, {0x40, 0x40}, {0x13, 0x15}, {0x30, 0x31}});
    CHECK(r.steps() == 7);
    CHECK(r.steps_to_branch() == 4);
    r.observe(0x1a, false, p.decode(), ring); // nothing ran
    CHECK(r.steps() == 7);
}

TEST_CASE("block steps: the walk finds the taken branch, past untaken ones",
          "[target][branch_trace]") {
    Program p;
    BranchRing ring(1024);
    SoftwareBranchRecorder r;
    r.moved_to(0x10);
    r.observe(0x30, true, p.decode(), ring); // mov, jle taken
    r.observe(0x13, true, p.decode(), ring); // nop, jmp
    r.observe(0x40, true, p.decode(), ring); // jle not taken, call
    r.observe(0x1a, true, p.decode(), ring); // ret
    CHECK(*ring.read(BranchTraceRead::Delta, 0x1a) ==
          Blocks{{0x1a, 0x1a}, {0x40, 0x40}, {0x13, 0x15}, {0x30, 0x31}, {0, 0x13}});
    CHECK(r.steps_to_branch() == r.steps());
    // A CPU that steps one instruction at a time anyway: sequential stops, no branch.
    r.moved_to(0x10);
    r.observe(0x13, true, p.decode(), ring);
    CHECK(ring.read(BranchTraceRead::New, 0x13)->empty());
    // A system call that sends the thread elsewhere (sigreturn) ends the walk there.
    p.code[0x50] = {2, FlowKind::System, {}};
    p.code[0x52] = {2, FlowKind::System, {}};
    r.moved_to(0x50);
    r.observe(0x52, true, p.decode(), ring); // it returned to the next instruction
    r.observe(0x10, true, p.decode(), ring); // this one did not
    CHECK(*ring.read(BranchTraceRead::Delta, 0x10) == Blocks{{0x10, 0x10}, {0, 0x52}});
}

TEST_CASE("signal handlers, unreadable code and moved pcs", "[target][branch_trace]") {
    Program p;
    BranchRing ring(1024);
    SoftwareBranchRecorder r;
    r.moved_to(0x10);
    r.observe(0x13, false, p.decode(), ring);
    r.entered_handler(); // a signal delivered: its handler is entered before 0x13 runs
    r.observe(0x900, false, p.decode(), ring);
    r.observe(0x904, false, p.decode(), ring); // unreadable code at 0x900 went on to 0x904
    CHECK(*ring.read(BranchTraceRead::All, 0x904) == Blocks{{0x904, 0x904}, {0x900, 0x900}});
    r.moved_to(0x30); // gdb wrote the pc: no branch went there
    r.observe(0x31, false, p.decode(), ring);
    CHECK(ring.recorded() == 2);
}
