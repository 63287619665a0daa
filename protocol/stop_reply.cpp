#include "protocol/stop_reply.hpp"
#include "protocol/hex.hpp"
#include <fmt/format.h>

namespace tpagent::protocol {

std::string encode_stop_reply(const StopReply& r) {
    const std::string process = r.process ? fmt::format(";process:{:x}", *r.process) : "";
    switch (r.kind) {
    case StopReply::Kind::Exited:
        return fmt::format("W{:02x}{}", r.code & 0xff, process);
    case StopReply::Kind::Killed:
        return fmt::format("X{:02x}{}", r.code & 0xff, process);
    case StopReply::Kind::ThreadExited:
        return fmt::format("w{:02x};{}", r.code & 0xff, r.thread);
    case StopReply::Kind::Signal:
        break;
    }
    if (r.form == StopReply::Form::SignalOnly) return fmt::format("S{:02x}", r.code & 0xff);
    std::string out = fmt::format("T{:02x}", r.code & 0xff);
    for (const auto& [regnum, value] : r.registers)
        out += fmt::format("{:02x}:{};", regnum, value);
    if (r.form == StopReply::Form::Full) out += "thread:" + r.thread + ";";
    if (r.swbreak) out += "swbreak:;";
    if (r.hwbreak) out += "hwbreak:;";
    if (r.watch) {
        const char* kind = r.watch->first == 3   ? "rwatch"
                           : r.watch->first == 4 ? "awatch"
                                                 : "watch";
        out += fmt::format("{}:{:x};", kind, r.watch->second);
    }
    if (r.syscall)
        out += fmt::format("{}:{:x};", r.syscall->first ? "syscall_entry" : "syscall_return",
                           r.syscall->second);
    if (r.exec_path) out += "exec:" + to_hex(*r.exec_path) + ";";
    if (r.fork_child) out += (r.vfork ? "vfork:" : "fork:") + *r.fork_child + ";";
    if (r.vfork_done) out += "vforkdone:;";
    if (r.thread_created) out += "create:;";
    return out;
}

} // namespace tpagent::protocol
