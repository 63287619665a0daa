#pragma once
// gdb's `info os [TYPE]` (qXfer:osdata:read:TYPE): tables of the system's processes, process
// groups, threads, open files, internet sockets, System V IPC objects, kernel modules and
// CPUs, read from /proc, with the types and columns gdbserver gives. TYPE "" lists the types.
#include "base/result.hpp"
#include <string>
#include <string_view>

namespace tpagent::server {

Result<std::string> osdata_xml(std::string_view type);

} // namespace tpagent::server
