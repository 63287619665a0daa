// The name server/ still creates the Linux process by (server.cpp): the class is LinuxProcess.
#pragma once
#include "process/linux/linux_process.hpp"

namespace tpagent::process {
using Inferior = LinuxProcess;
} // namespace tpagent::process
