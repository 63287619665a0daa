// Children the program forked that tpagent holds stopped for gdb (fork-events) until gdb lets
// them go, kills them or takes one as a target of its own; and the children whose first stop
// came before their parent's fork event.
#pragma once
#include "process/linux/address_space.hpp"
#include <cstddef>
#include <optional>
#include <set>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

class ForkChildren {
  public:
    // Waits for the child's first stop, unless it already came (seen_early).
    void await(pid_t child);
    // The child's first stop came before its parent's fork event.
    void seen_early(pid_t child) { seen_.insert(child); }

    // Held stopped for gdb; `vfork`: it shares the parent's memory.
    void hold(pid_t child, bool vfork);
    bool held(pid_t pid) const { return held_.count(pid) != 0; }
    std::vector<pid_t> list() const { return {held_.begin(), held_.end()}; }
    std::size_t size() const { return held_.size(); }
    // No longer held: whether the child shared the parent's memory; nullopt if not held.
    std::optional<bool> take(pid_t pid);

    // Lets the held child run on (gdb detached it): true if it was held. A vfork child has
    // the parent's breakpoints lifted from `memory` while it runs there.
    bool release(pid_t pid, AddressSpace& memory);
    // Every held child but those in `keep` runs on, as release does.
    void release_all_but(const std::set<pid_t>& keep, AddressSpace& memory);
    // Kills the held child and reaps it: true if it was held.
    bool kill(pid_t pid);

    // The child runs on untraced.
    static void detach(pid_t child);

  private:
    std::set<pid_t> held_;  // stopped, for gdb
    std::set<pid_t> vfork_; // those of them that share the parent's memory
    std::set<pid_t> seen_;  // first stop seen before the parent's event
};

} // namespace tpagent::process
