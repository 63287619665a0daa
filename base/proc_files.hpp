// Small reads of the kernel's per-process files (/proc/PID/...).
#pragma once
#include <string>

namespace tpagent::agent {

// The whole file; empty if it cannot be read.
std::string read_file(const std::string& path);
// The target of a symbolic link; empty if it cannot be read.
std::string read_link(const std::string& path);

} // namespace tpagent::agent
