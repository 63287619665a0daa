// Branch trace (see branch_traces.hpp): the software recorder steps a recorded thread while it
// runs (LinuxProcess::resume_thread) and finds each taken branch from where the steps stop.
#include "process/linux/branch_traces.hpp"
#include <algorithm>
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

BranchTraces::BranchTraces(const arch::Architecture& arch, LinuxThreads& threads,
                           SoftwareBreakpoints& breakpoints, ReadPc read_pc, ReadMemory read_memory)
    : arch_(arch), threads_(threads), breakpoints_(breakpoints), read_pc_(std::move(read_pc)),
      read_memory_(std::move(read_memory)) {}

Result<BranchTraceConfig> BranchTraces::enable(pid_t tid, const Request& request) {
    if (!threads_.count(tid)) return make_error(ErrorCode::NoProcess, "No such thread.");
    if (recordings_.count(tid)) return make_error(ErrorCode::NotAllowed, "Btrace already enabled.");
    if (request.format == BranchTraceFormat::Pt)
        return make_error(ErrorCode::Unsupported,
                          "Intel Processor Trace is not available: " + why_no_intel_pt() + ".");
    std::uint32_t size = request.size == 0 ? kUnlimitedBranchTraceBytes : request.size;
    size = std::min(size, kMaxBranchTraceBytes);
    auto hardware = PerfBranchStore::open(tid, size);
    if (hardware) size = static_cast<std::uint32_t>((*hardware)->size());
    size =
        std::max<std::uint32_t>(size - size % BranchRing::kRecordBytes, BranchRing::kRecordBytes);
    auto [it, added] = recordings_.try_emplace(tid, size);
    Recording& r = it->second;
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
        if (auto pc = read_pc_(tid)) r.software.moved_to(*pc);
    }
    spdlog::debug("thread {}: branch trace enabled, {}", tid, r.config.backend);
    return r.config;
}

Status BranchTraces::disable(pid_t tid) {
    // (A step of the recorder's still in flight ends as one, and a running thread's breakpoint
    // at its next branch is taken out when it gets there: the next resume just continues.)
    if (auto t = threads_.find(tid); t != threads_.end() && t->second.kernel.stopped())
        clear_block_end(t->second, breakpoints_);
    if (!recordings_.erase(tid))
        return make_error(ErrorCode::NotAllowed, "Branch tracing not enabled.");
    return ok_status();
}

Result<BranchTraceConfig> BranchTraces::config(pid_t tid) const {
    auto it = recordings_.find(tid);
    if (it == recordings_.end()) return make_error(ErrorCode::NotAllowed, "Btrace not enabled.");
    BranchTraceConfig c = it->second.config;
    c.branches = it->second.ring.recorded();
    c.steps = it->second.software.steps();
    c.steps_to_branch = it->second.software.steps_to_branch();
    return c;
}

Result<std::vector<BranchBlock>> BranchTraces::read(pid_t tid, BranchTraceRead kind) {
    auto it = recordings_.find(tid);
    if (it == recordings_.end()) return make_error(ErrorCode::NotAllowed, "Btrace not enabled.");
    // Only a thread of ours, stopped.
    if (auto t = threads_.find(tid); t == threads_.end())
        return make_error(ErrorCode::NoProcess, "no such thread");
    else if (!t->second.kernel.stopped())
        return make_error(ErrorCode::NotAllowed, "thread is running");
    Recording& r = it->second;
    auto pc = read_pc_(tid);
    if (!pc) return pc.error();
    if (r.hardware)
        r.hardware->drain(r.ring);
    else
        observe(tid, r); // the last step's branch, if it took one
    return r.ring.read(kind, *pc);
}

BranchTraces::Recording* BranchTraces::find(pid_t tid) {
    auto it = recordings_.find(tid);
    return it != recordings_.end() ? &it->second : nullptr;
}

BranchTraces::Recording* BranchTraces::software_recording(pid_t tid) {
    Recording* r = find(tid);
    return r && !r->hardware ? r : nullptr;
}

void BranchTraces::keep_only(pid_t tid, std::optional<pid_t> former) {
    if (former) {
        if (auto r = recordings_.find(*former); r != recordings_.end()) {
            auto node = recordings_.extract(r);
            node.key() = tid;
            recordings_.erase(tid);
            recordings_.insert(std::move(node));
        }
    }
    std::erase_if(recordings_, [&](const auto& r) { return r.first != tid; });
}

void BranchTraces::observe(pid_t tid, Recording& r) {
    auto pc = read_pc_(tid);
    if (!pc) return;
    // (After a block end's breakpoint, the walk goes through the whole block; a block step is
    // a single step where the CPU has none.)
    const bool whole_block = r.method == BranchStepMethod::BlockEnds ||
                             (r.method == BranchStepMethod::BlockSteps && kHasBlockStep);
    r.software.observe(
        *pc, whole_block, [this](std::uint64_t addr) { return flow_at(addr); }, r.ring);
}

bool BranchTraces::place_block_end(pid_t tid, LinuxThread& t, const Recording& r,
                                   SoftwareBreakpoints& breakpoints,
                                   const std::function<bool(std::uint64_t)>& patched) {
    auto pc = read_pc_(tid);
    // Only where the recorder knows the thread is (not sent into a pad).
    if (!pc || r.software.position() != *pc) return false;
    std::uint64_t at = *pc;
    for (int n = 0;; ++n) {
        if (n == kMaxBlockWalk) return false;
        auto insn = flow_at(at);
        if (!insn) return false;
        if (insn->kind != arch::FlowKind::Sequential) break;
        at += insn->length;
    }
    if (at == *pc) return false; // at the branch: a step takes it
    if (breakpoints.inserted_at(at) || patched(at)) return false;
    if (auto i = breakpoints.insert(at); !i) return false;
    t.activity = thread_activity::RunningToBlockEnd{at};
    return true;
}

void BranchTraces::clear_block_end(LinuxThread& t, SoftwareBreakpoints& breakpoints) {
    const auto* block_end = t.doing<thread_activity::RunningToBlockEnd>();
    if (!block_end) return;
    if (auto r = breakpoints.remove(block_end->trap); !r)
        spdlog::warn("cannot take out the branch recorder's breakpoint at 0x{:x}: {}",
                     block_end->trap, r.error().text);
    t.end<thread_activity::RunningToBlockEnd>();
}

Result<arch::FlowInstruction> BranchTraces::flow_at(std::uint64_t addr) {
    if (auto hit = flow_cache_.find(addr); hit != flow_cache_.end()) return hit->second;
    std::uint8_t code[16] = {};
    const std::size_t want = std::min(sizeof code, arch_.max_instruction_bytes());
    auto got = read_memory_(addr, std::span(code, want));
    if (!got) return got.error();
    auto insn = arch_.decode_flow(std::span(code, *got), addr);
    if (!insn) return insn.error();
    if (flow_cache_.size() >= kMaxFlowCache) flow_cache_.clear();
    flow_cache_.emplace(addr, *insn);
    return *insn;
}

} // namespace tpagent::process
