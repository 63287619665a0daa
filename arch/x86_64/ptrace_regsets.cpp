#include "arch/x86_64/ptrace_regsets.hpp"
#include "base/system_error.hpp"
#include "arch/x86_64/xsave_layout.hpp"
#include <cerrno>
#include <cstring>
#include <elf.h>
#include <fmt/format.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>

namespace tpagent::arch::x86_64 {
namespace {

// Returns the bytes the kernel filled, or -errno.
long get_regset(pid_t tid, int note, std::vector<std::uint8_t>& buf) {
    iovec iov{buf.data(), buf.size()};
    if (ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(static_cast<long>(note)), &iov) != 0)
        return -errno;
    return static_cast<long>(iov.iov_len);
}

long set_regset(pid_t tid, int note, const std::vector<std::uint8_t>& buf) {
    iovec iov{const_cast<std::uint8_t*>(buf.data()), buf.size()};
    if (ptrace(PTRACE_SETREGSET, tid, reinterpret_cast<void*>(static_cast<long>(note)), &iov) != 0)
        return -errno;
    return 0;
}

} // namespace

Status read_general_regset(pid_t tid, RegisterSnapshot& out) {
    out.gpr.assign(sizeof(user_regs_struct), 0);
    long n = get_regset(tid, NT_PRSTATUS, out.gpr);
    if (n < 0) return ptrace_error("PTRACE_GETREGSET(NT_PRSTATUS)", tid, static_cast<int>(-n));
    out.gpr.resize(static_cast<std::size_t>(n));
    return ok_status();
}

Status read_regsets(pid_t tid, std::size_t xstate_capacity, RegisterSnapshot& out) {
    if (auto s = read_general_regset(tid, out); !s) return s;
    long n = 0;
    out.xstate.assign(std::max<std::size_t>(xstate_capacity, fxsave::kSize), 0);
    n = get_regset(tid, NT_X86_XSTATE, out.xstate);
    if (n == -ENODEV || n == -EINVAL) {
        out.xstate.assign(fxsave::kSize, 0);
        n = get_regset(tid, NT_PRFPREG, out.xstate);
    }
    if (n < 0) {
        out.xstate.clear();
        return ptrace_error("PTRACE_GETREGSET(fp state)", tid, static_cast<int>(-n));
    }
    out.xstate.resize(static_cast<std::size_t>(n));
    return ok_status();
}

Status write_regsets(pid_t tid, const RegisterSnapshot& in) {
    if (!in.gpr.empty()) {
        if (long r = set_regset(tid, NT_PRSTATUS, in.gpr); r < 0)
            return ptrace_error("PTRACE_SETREGSET(NT_PRSTATUS)", tid, static_cast<int>(-r));
    }
    if (!in.xstate.empty()) {
        // A legacy-only area came from NT_PRFPREG; anything longer has an XSAVE header.
        const int note = in.xstate.size() > fxsave::kSize ? NT_X86_XSTATE : NT_PRFPREG;
        if (long r = set_regset(tid, note, in.xstate); r < 0)
            return ptrace_error("PTRACE_SETREGSET(fp state)", tid, static_cast<int>(-r));
    }
    return ok_status();
}

} // namespace tpagent::arch::x86_64
