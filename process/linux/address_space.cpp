#include "process/linux/address_space.hpp"
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

namespace tpagent::process {

AddressSpace::AddressSpace(std::span<const std::uint8_t> breakpoint_instruction)
    : breakpoints_(
          breakpoint_instruction,
          [this](std::uint64_t a, std::span<std::uint8_t> out) {
              std::size_t got = 0;
              auto s = read_raw(a, out, got);
              if (s && got != out.size())
                  return Status(make_error(ErrorCode::MemoryAccess, "unreadable"));
              return s;
          },
          [this](std::uint64_t a, std::span<const std::uint8_t> d) { return write_raw(a, d); }) {}

AddressSpace::~AddressSpace() {
    if (mem_fd_ >= 0) close(mem_fd_);
}

void AddressSpace::open(pid_t pid) {
    if (mem_fd_ >= 0) close(mem_fd_);
    mem_fd_ = ::open(fmt::format("/proc/{}/mem", pid).c_str(), O_RDWR | O_CLOEXEC);
}

Status AddressSpace::read_raw(std::uint64_t addr, std::span<std::uint8_t> out,
                              std::size_t& got) const {
    got = 0;
    while (got < out.size()) {
        ssize_t n =
            pread(mem_fd_, out.data() + got, out.size() - got, static_cast<off_t>(addr + got));
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    if (got == 0 && !out.empty()) return make_error(ErrorCode::MemoryAccess, "cannot read memory");
    return ok_status();
}

Status AddressSpace::write_raw(std::uint64_t addr, std::span<const std::uint8_t> data) {
    std::size_t done = 0;
    while (done < data.size()) {
        ssize_t n = pwrite(mem_fd_, data.data() + done, data.size() - done,
                           static_cast<off_t>(addr + done));
        if (n <= 0) return make_error(ErrorCode::MemoryAccess, "cannot write memory");
        done += static_cast<std::size_t>(n);
    }
    return ok_status();
}

Status AddressSpace::insert_user_breakpoint(std::uint64_t addr) {
    if (carried_.count(addr)) return ok_status(); // its jump is in
    // gdb's breakpoint is one reference however often gdb inserts it again.
    if (user_breakpoints_.count(addr)) return breakpoints_.reinsert(addr);
    if (auto s = breakpoints_.insert(addr); !s) return s;
    user_breakpoints_.insert(addr);
    return ok_status();
}

Status AddressSpace::remove_user_breakpoint(std::uint64_t addr) {
    if (!user_breakpoints_.erase(addr))
        return make_error(ErrorCode::NotFound, "no breakpoint there");
    if (carried_.erase(addr)) return ok_status(); // nothing of it in memory
    return breakpoints_.remove(addr);
}

Status AddressSpace::carry_user_breakpoint(std::uint64_t addr) {
    if (!user_breakpoints_.count(addr) || carried_.count(addr))
        return make_error(ErrorCode::NotFound, "no breakpoint instruction of gdb's there");
    if (auto s = breakpoints_.remove(addr); !s) return s;
    carried_.insert(addr);
    return ok_status();
}

Status AddressSpace::uncarry_user_breakpoint(std::uint64_t addr) {
    if (!carried_.erase(addr)) return ok_status();
    return breakpoints_.insert(addr);
}

AddressSpace::BreakpointBytes AddressSpace::give_up_user_breakpoints() {
    BreakpointBytes given;
    breakpoints_.for_each_original([&](std::uint64_t addr, std::span<const std::uint8_t> bytes) {
        if (user_breakpoints_.count(addr))
            given.emplace_back(addr, std::vector(bytes.begin(), bytes.end()));
    });
    for (const auto& [addr, bytes] : given) {
        user_breakpoints_.erase(addr);
        breakpoints_.disown(addr);
    }
    return given;
}

void AddressSpace::adopt_user_breakpoints(const BreakpointBytes& breakpoints) {
    for (const auto& [addr, original] : breakpoints)
        if (user_breakpoints_.insert(addr).second) breakpoints_.adopt(addr, original);
}

void AddressSpace::forget_all() {
    breakpoints_.forget_all();
    user_breakpoints_.clear();
    carried_.clear();
}

void AddressSpace::lift_for_vfork() {
    breakpoints_.for_each_original([&](std::uint64_t addr, auto) {
        if (breakpoints_.lift(addr)) lifted_for_vfork_.push_back(addr);
    });
}

void AddressSpace::lower_after_vfork() {
    for (std::uint64_t addr : lifted_for_vfork_)
        (void)breakpoints_.lower(addr);
    lifted_for_vfork_.clear();
}

} // namespace tpagent::process
