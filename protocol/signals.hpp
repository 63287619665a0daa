// The RSP numbers signals as gdb does (its own table), not as the host kernel does.
#pragma once

namespace tpagent::protocol {

int host_to_gdb_signal(int host_signal);
int gdb_to_host_signal(int gdb_signal); // 0 if the host has no such signal

} // namespace tpagent::protocol
