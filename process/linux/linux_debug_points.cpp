#include "process/linux/linux_debug_points.hpp"
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::process {

Status LinuxDebugPoints::insert_breakpoint(std::uint64_t addr) {
    if (memory_.user_breakpoint_at(addr)) return ok_status();
    if (const auto fast = fast_sites_.covering(addr); fast && fast->site != addr)
        return make_error(ErrorCode::NotAllowed,
                          fmt::format("0x{:x} is inside the {} bytes of instructions the fast "
                                      "tracepoint at 0x{:x} runs from its pad: no thread runs "
                                      "them there",
                                      addr, fast->covered, fast->site));
    return memory_.insert_user_breakpoint(addr);
}

Status LinuxDebugPoints::insert_hw_point(int type, std::uint64_t addr, std::uint64_t len) {
    if (auto s = hw_.insert(type, addr, len); !s) return s;
    for (auto& [tid, t] : threads_) {
        if (!t.kernel.stopped()) continue;
        if (auto a = hw_.apply(tid); !a) {
            // Refused as a whole: no thread keeps half of it.
            if (auto r = hw_.remove(type, addr, len); r)
                for (auto& [other, ot] : threads_)
                    if (ot.kernel.stopped() && !hw_.apply(other))
                        spdlog::warn("thread {}: debug registers not restored", other);
            return a;
        }
    }
    return ok_status();
}

Status LinuxDebugPoints::remove_hw_point(int type, std::uint64_t addr, std::uint64_t len) {
    if (auto s = hw_.remove(type, addr, len); !s) return s;
    Status all = ok_status();
    for (auto& [tid, t] : threads_)
        if (t.kernel.stopped())
            if (auto a = hw_.apply(tid); !a && all) all = a; // the rest still go
    return all;
}

} // namespace tpagent::process
