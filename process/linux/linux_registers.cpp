#include "process/linux/linux_registers.hpp"
#include "base/system_error.hpp"
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <sys/ptrace.h>

namespace tpagent::process {

Result<arch::RegisterSnapshot*> LinuxRegisters::snapshot(pid_t tid, bool full) {
    auto it = threads_.find(tid);
    if (it == threads_.end()) return make_error(ErrorCode::NoProcess, "no such thread");
    LinuxThread& t = it->second;
    if (!t.kernel.stopped()) return make_error(ErrorCode::NotAllowed, "thread is running");
    if (!t.regs) {
        arch::RegisterSnapshot s;
        auto r = full ? arch_.read_snapshot(tid, s) : arch_.read_general_registers(tid, s);
        if (!r) return r.error();
        t.regs = std::move(s);
        t.regs_full = full;
    } else if (full && !t.regs_full) {
        // The cached gpr may hold changes not yet written (a moved pc): fetch only the rest.
        arch::RegisterSnapshot s;
        if (auto r = arch_.read_snapshot(tid, s); !r) return r.error();
        t.regs->xstate = std::move(s.xstate);
        t.regs_full = true;
    }
    return &*t.regs;
}

Result<std::vector<std::uint8_t>> LinuxRegisters::read(pid_t tid, std::vector<bool>& available,
                                                       bool full) {
    auto s = snapshot(tid, full);
    if (!s) return s.error();
    std::vector<std::uint8_t> g(arch_.g_size());
    if (full || threads_[tid].regs_full) {
        arch_.snapshot_to_g(**s, g, available);
    } else {
        arch::RegisterSnapshot gpr_only;
        gpr_only.gpr = (*s)->gpr;
        arch_.snapshot_to_g(gpr_only, g, available);
    }
    return g;
}

Status LinuxRegisters::write(pid_t tid, std::span<const std::uint8_t> g) {
    if (g.size() != arch_.g_size())
        return make_error(ErrorCode::BadPacket, "wrong register block size");
    auto s = snapshot(tid);
    if (!s) return s.error();
    BranchTraces::Recording* recording = branch_traces_.software_recording(tid);
    if (recording) branch_traces_.observe(tid, *recording); // where it got to, before the pc moves
    arch_.g_to_snapshot(g, **s);
    if (recording) recording->software.moved_to(arch_.pc(**s));
    return arch_.write_snapshot(tid, **s);
}

Status LinuxRegisters::check_stopped(pid_t tid) const {
    auto it = threads_.find(tid);
    if (it == threads_.end()) return make_error(ErrorCode::NoProcess, "no such thread");
    if (!it->second.kernel.stopped()) return make_error(ErrorCode::NotAllowed, "thread is running");
    return ok_status();
}

Result<std::vector<std::uint8_t>> LinuxRegisters::read_siginfo(pid_t tid) {
    if (auto stopped = check_stopped(tid); !stopped) return stopped.error();
    siginfo_t info{};
    if (ptrace(PTRACE_GETSIGINFO, tid, nullptr, &info) != 0)
        return system_error("PTRACE_GETSIGINFO");
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&info);
    return std::vector<std::uint8_t>(bytes, bytes + sizeof info);
}

Status LinuxRegisters::write_siginfo(pid_t tid, std::span<const std::uint8_t> siginfo) {
    if (auto stopped = check_stopped(tid); !stopped) return stopped.error();
    siginfo_t info{};
    if (siginfo.size() != sizeof info)
        return make_error(ErrorCode::BadPacket, fmt::format("siginfo is {} bytes", sizeof info));
    std::memcpy(&info, siginfo.data(), sizeof info);
    if (ptrace(PTRACE_SETSIGINFO, tid, nullptr, &info) != 0)
        return system_error("PTRACE_SETSIGINFO");
    return ok_status();
}

Status LinuxRegisters::write_one(pid_t tid, int regnum, std::span<const std::uint8_t> value) {
    auto regs = arch_.registers();
    if (regnum < 0 || static_cast<std::size_t>(regnum) >= regs.size())
        return make_error(ErrorCode::NotFound, "no such register");
    const auto& desc = regs[static_cast<std::size_t>(regnum)];
    if (value.size() != desc.size) return make_error(ErrorCode::BadPacket, "wrong register size");
    std::vector<bool> avail;
    auto g = read(tid, avail);
    if (!g) return g.error();
    std::copy(value.begin(), value.end(), g->begin() + desc.g_offset);
    return write(tid, *g);
}

Result<std::uint64_t> LinuxRegisters::read_pc(pid_t tid) {
    auto s = snapshot(tid, false);
    if (!s) return s.error();
    return arch_.pc(**s);
}

} // namespace tpagent::process
