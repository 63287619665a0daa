// Branch trace (record btrace): each recorded thread has a ring of taken branches, filled by
// the CPU (perf BTS) where it can, else by the software recorder, which steps the thread while
// it runs (resume_thread) and finds each taken branch from where the steps stop.
#include "process/linux/linux_process.hpp"
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::process {

namespace {
constexpr std::uint32_t kMaxBranchTraceBytes = 16U << 20;      // per thread: 1 Mi branches
constexpr std::uint32_t kUnlimitedBranchTraceBytes = 4U << 20; // gdb's "unlimited" (size 0)
constexpr std::size_t kMaxFlowCache = 1U << 20;
constexpr int kMaxBlockWalk = 4096; // a longer straight run is stepped through
#if defined(__x86_64__)
constexpr bool kHasBlockStep = true;
#else
constexpr bool kHasBlockStep = false;
#endif
} // namespace

Result<BranchTraceConfig> LinuxProcess::enable_branch_trace(pid_t tid,
                                                            const BranchTraceRequest& request) {
    if (!threads_.count(tid)) return make_error(ErrorCode::NoProcess, "No such thread.");
    if (branch_traces_.count(tid))
        return make_error(ErrorCode::NotAllowed, "Btrace already enabled.");
    if (request.format == BranchTraceFormat::Pt)
        return make_error(ErrorCode::Unsupported,
                          "Intel Processor Trace is not available: " + why_no_intel_pt() + ".");
    std::uint32_t size = request.size == 0 ? kUnlimitedBranchTraceBytes : request.size;
    size = std::min(size, kMaxBranchTraceBytes);
    auto hardware = PerfBranchStore::open(tid, size);
    if (hardware) size = static_cast<std::uint32_t>((*hardware)->size());
    size =
        std::max<std::uint32_t>(size - size % BranchRing::kRecordBytes, BranchRing::kRecordBytes);
    auto [it, added] = branch_traces_.try_emplace(tid, size);
    BranchRecording& r = it->second;
    r.config.format = BranchTraceFormat::Bts;
    r.config.size = size;
    if (hardware) {
        r.hardware = std::move(*hardware);
        r.config.backend = "hardware BTS (perf)";
    } else {
        r.method = request.method;
        constexpr std::string_view kNames[] = {"block ends", "block steps", "single steps"};
        r.config.backend =
            fmt::format("software, {} (no hardware BTS: {})",
                        kNames[static_cast<int>(request.method)], hardware.error().text);
        if (auto pc = read_pc(tid)) r.software.moved_to(*pc);
    }
    spdlog::debug("thread {}: branch trace enabled, {}", tid, r.config.backend);
    return r.config;
}

Status LinuxProcess::disable_branch_trace(pid_t tid) {
    // (A step of the recorder's still in flight ends as one, and a running thread's breakpoint
    // at its next branch is taken out when it gets there: the next resume just continues.)
    if (auto t = threads_.find(tid); t != threads_.end() && t->second.stopped)
        clear_block_end(t->second);
    if (!branch_traces_.erase(tid))
        return make_error(ErrorCode::NotAllowed, "Branch tracing not enabled.");
    return ok_status();
}

Result<BranchTraceConfig> LinuxProcess::branch_trace_config(pid_t tid) const {
    auto it = branch_traces_.find(tid);
    if (it == branch_traces_.end()) return make_error(ErrorCode::NotAllowed, "Btrace not enabled.");
    BranchTraceConfig c = it->second.config;
    c.branches = it->second.ring.recorded();
    c.steps = it->second.software.steps();
    c.steps_to_branch = it->second.software.steps_to_branch();
    return c;
}

Result<std::vector<BranchBlock>> LinuxProcess::read_branch_trace(pid_t tid, BranchTraceRead kind) {
    auto it = branch_traces_.find(tid);
    if (it == branch_traces_.end()) return make_error(ErrorCode::NotAllowed, "Btrace not enabled.");
    if (auto stopped = check_stopped(tid); !stopped) return stopped.error();
    BranchRecording& r = it->second;
    auto pc = read_pc(tid);
    if (!pc) return pc.error();
    if (r.hardware)
        r.hardware->drain(r.ring);
    else
        observe_branches(tid, r); // the last step's branch, if it took one
    return r.ring.read(kind, *pc);
}

LinuxProcess::BranchRecording* LinuxProcess::software_recording(pid_t tid) {
    auto it = branch_traces_.find(tid);
    return it != branch_traces_.end() && !it->second.hardware ? &it->second : nullptr;
}

void LinuxProcess::observe_branches(pid_t tid, BranchRecording& r) {
    auto pc = read_pc(tid);
    if (!pc) return;
    // (After a block end's breakpoint, the walk goes through the whole block; a block step is
    // a single step where the CPU has none.)
    const bool whole_block = r.method == BranchStepMethod::BlockEnds ||
                             (r.method == BranchStepMethod::BlockSteps && kHasBlockStep);
    r.software.observe(
        *pc, whole_block, [this](std::uint64_t addr) { return flow_at(addr); }, r.ring);
}

bool LinuxProcess::place_block_end(pid_t tid, LinuxThread& t, const BranchRecording& r) {
    auto pc = read_pc(tid);
    // Only where the recorder knows the thread is (not sent into a pad), and with no other
    // thread that could meet the breakpoint: another would have to step over it, lifting it
    // for a moment in which this one could pass it unseen.
    if (!pc || r.software.position() != *pc || threads_.size() != 1) return false;
    if (vfork_running_ || vfork_child_) return false; // the memory is shared with another
    std::uint64_t at = *pc;
    for (int n = 0;; ++n) {
        if (n == kMaxBlockWalk) return false;
        auto insn = flow_at(at);
        if (!insn) return false;
        if (insn->kind != arch::FlowKind::Sequential) break;
        at += insn->length;
    }
    if (at == *pc) return false; // at the branch: a step takes it
    // Not into code tpagent or gdb has patched: a breakpoint (whose hit is theirs) or a fast
    // tracepoint's jump.
    if (memory_->breakpoints().inserted_at(at)) return false;
    for (const auto& [addr, site] : fast_sites_)
        if (at >= addr && at < addr + site.patch.size()) return false;
    if (auto i = memory_->breakpoints().insert(at); !i) return false;
    t.activity = thread_activity::RunningToBlockEnd{at};
    return true;
}

void LinuxProcess::clear_block_end(LinuxThread& t) {
    const auto* block_end = t.doing<thread_activity::RunningToBlockEnd>();
    if (!block_end) return;
    if (auto r = memory_->breakpoints().remove(block_end->trap); !r)
        spdlog::warn("cannot take out the branch recorder's breakpoint at 0x{:x}: {}",
                     block_end->trap, r.error().text);
    t.end<thread_activity::RunningToBlockEnd>();
}

Result<arch::FlowInstruction> LinuxProcess::flow_at(std::uint64_t addr) {
    if (auto hit = flow_cache_.find(addr); hit != flow_cache_.end()) return hit->second;
    std::uint8_t code[16] = {};
    const std::size_t want = std::min(sizeof code, arch_.max_instruction_bytes());
    auto got = read_memory(addr, std::span(code, want));
    if (!got) return got.error();
    auto insn = arch_.decode_flow(std::span(code, *got), addr);
    if (!insn) return insn.error();
    if (flow_cache_.size() >= kMaxFlowCache) flow_cache_.clear();
    flow_cache_.emplace(addr, *insn);
    return *insn;
}

} // namespace tpagent::process
