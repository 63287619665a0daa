#include "process/linux/remote_call.hpp"
#include <spdlog/spdlog.h>
#include <utility>

namespace tpagent::process {

RemoteCall::RemoteCall(const arch::Architecture& arch, pid_t tid, LinuxThread& thread,
                       const arch::RegisterSnapshot& current, MemoryWriter write_memory,
                       std::string what)
    : arch_(arch), tid_(tid), thread_(thread), saved_(current),
      write_memory_(std::move(write_memory)), what_(std::move(what)) {}

RemoteCall::~RemoteCall() {
    if (!finished_) (void)finish();
}

Status RemoteCall::set_registers(const arch::RegisterSnapshot& regs) {
    registers_changed_ = true; // (a failed write may have changed some)
    return arch_.write_snapshot(tid_, regs);
}

void RemoteCall::overwrote(std::uint64_t addr, std::vector<std::uint8_t> original) {
    overwritten_.push_back({addr, std::move(original)});
}

Status RemoteCall::finish() {
    finished_ = true;
    Status restored = ok_status();
    for (auto it = overwritten_.rbegin(); it != overwritten_.rend() && restored; ++it)
        restored = write_memory_(it->addr, it->original);
    if (restored && registers_changed_) restored = arch_.write_snapshot(tid_, saved_);
    thread_.regs = saved_; // the cache holds what the thread has again
    if (!restored)
        spdlog::error("thread {}: cannot undo an injected {}: {}", tid_, what_,
                      restored.error().text);
    return restored;
}

} // namespace tpagent::process
