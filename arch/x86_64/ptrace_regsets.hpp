// Register transfer with a ptrace-stopped thread through PTRACE_GETREGSET/SETREGSET.
#pragma once
#include "arch/arch.hpp"
#include "base/result.hpp"
#include <cstddef>
#include <sys/types.h>

namespace tpagent::arch::x86_64 {

// Reads NT_PRSTATUS and NT_X86_XSTATE (NT_PRFPREG's 512 bytes when the kernel has no XSAVE
// regset). `xstate_capacity` bounds the XSAVE area; the snapshot keeps the size returned.
// NT_PRSTATUS only: the cheap read when only the pc or stack pointer is needed.
Status read_general_regset(pid_t tid, RegisterSnapshot& out);
Status read_regsets(pid_t tid, std::size_t xstate_capacity, RegisterSnapshot& out);

// Writes back whatever parts `in` holds (an empty part is left alone).
Status write_regsets(pid_t tid, const RegisterSnapshot& in);

} // namespace tpagent::arch::x86_64
