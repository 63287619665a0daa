// Whether code in a process is in a branch-target-guarded mapping (arm64 BTI: PROT_BTI, shown
// as "bt" in the mapping's VmFlags in /proc/PID/smaps): there an indirect branch must land on
// a landing-pad instruction, which a fast tracepoint's jump must then not replace.
#pragma once
#include <cstdint>
#include <string_view>
#include <sys/types.h>

namespace tpagent::process {

// From smaps text: the VmFlags of the mapping holding `addr` include "bt".
bool guarded_in_smaps(std::string_view smaps, std::uint64_t addr);
// The same for a live process (false when its smaps cannot be read).
bool branch_target_guarded(pid_t pid, std::uint64_t addr);

} // namespace tpagent::process
