// The target description gdb reads with qXfer:features:read:target.xml.
#pragma once
#include "arch/x86_64/registers.hpp"
#include <string>

namespace tpagent::arch::x86_64 {

// One self-contained document: architecture, osabi, and every feature of `layout` with its
// type definitions and registers (each with an explicit regnum).
std::string build_target_xml(const RegisterLayout& layout);

} // namespace tpagent::arch::x86_64
