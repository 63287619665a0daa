// Displaced-execution sites (trap tracepoints) of a traced program: a breakpoint whose original
// instruction is run from a pad mapped near the code, so a thread passes the site with a single
// stop. A part of process::Target (Target::trap_sites).
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <functional>
#include <sys/types.h>

namespace tpagent::process {

class TrapSites {
  public:
    virtual ~TrapSites() = default;

    struct SiteHit {
        bool consumed = false;   // handled here: resume the thread unless gdb has a breakpoint too
        std::uint64_t steps = 0; // then single-step this many times (while-stepping)
    };
    using SiteHitHandler = std::function<SiteHit(pid_t tid, std::uint64_t site)>;
    using SiteStepHandler = std::function<void(pid_t tid, std::uint64_t site)>;
    virtual void set_handlers(SiteHitHandler hit, SiteStepHandler step) = 0;
    // All threads must be stopped (a pad may have to be mapped with an injected mmap).
    virtual Status add(std::uint64_t addr) = 0;
    virtual void remove(std::uint64_t addr) = 0;
    virtual void remove_all() = 0;
    virtual bool has(std::uint64_t addr) const = 0;
};

} // namespace tpagent::process
