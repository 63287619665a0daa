#include "tools/tpdump/html_value_roles.hpp"

#include "trace/trace_state_variables.hpp"
#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

namespace tpagent::tpdump {

namespace {

// The user half of the address space of x86-64 and arm64 (47 bits, 4-level page tables):
// below 0x10000 Linux maps nothing (vm.mmap_min_addr), so no object lives there; from
// 0x800000000000 on the addresses are the kernel's or not canonical.
constexpr std::uint64_t kUserStart = 0x10000;
constexpr std::uint64_t kUserEnd = 0x800000000000;
// How far from an address known to be mapped a pointer may lie. Above 4 GiB: a GiB, for the
// heap starts up to 32 MiB after the program's data (brk randomization) and grows from there,
// and mmap'd memory (thread stacks, malloc arenas) lies below the libraries and the TLS;
// quantities that large (a clock in ms, bytes sent) lie terabytes away from the mappings of a
// position-independent program (at 0x55... and 0x7f...). Below 4 GiB lie most quantities, and
// the code, data and heap of a program built without PIE (from 0x400000 on): there a pointer
// must lie in the same stretch of data, heap or stack as a mapped address, within a MiB.
constexpr std::uint64_t kLowAddressEnd = std::uint64_t{1} << 32;
constexpr std::uint64_t kNearMapped = std::uint64_t{1} << 30;
constexpr std::uint64_t kNearMappedLow = std::uint64_t{1} << 20;

// Registers that hold addresses by their role: program counters, stack and frame pointers,
// link registers, TLS bases (x86-64, i386, arm64 names). A description types the first ones
// code_ptr or data_ptr, but not every one (fs_base and tpidr are plain ints).
constexpr std::array<std::string_view, 16> kPointerRegisters = {
    "rip", "rsp", "rbp", "eip", "esp",     "ebp",     "pc",    "sp",
    "fp",  "lr",  "x29", "x30", "fs_base", "gs_base", "tpidr", "tpidr2"};
// Registers that hold identifiers: x86 segment selectors, and the syscall number the kernel
// keeps in orig_rax.
constexpr std::array<std::string_view, 8> kIdentifierRegisters = {
    "cs", "ss", "ds", "es", "fs", "gs", "orig_rax", "orig_eax"};

template <class Names> bool named(const Names& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// The types of a target description that hold a number (gdb's predefined scalar types);
// any other type of a small register is one the description defines: flags (eflags, mxcsr,
// cpsr), whose bits are not a number.
bool numeric_type(std::string_view type) {
    return type.empty() || type.starts_with("int") || type.starts_with("uint") ||
           type.starts_with("ieee_") || type == "long" || type == "float" || type == "double" ||
           type == "i387_ext" || type == "bool" || type == "size_t" || type == "code_ptr" ||
           type == "data_ptr";
}

bool in_user_space(std::uint64_t value) {
    return value >= kUserStart && value < kUserEnd;
}

} // namespace

const char* role_name(ValueRole role) {
    switch (role) {
    case ValueRole::Quantity:
        return "quantity";
    case ValueRole::Address:
        return "address";
    case ValueRole::Identifier:
        return "identifier";
    }
    return "";
}

std::optional<ValueRole> register_role(const tracefile::RegisterInfo& reg) {
    if (reg.type == "code_ptr" || reg.type == "data_ptr" || named(kPointerRegisters, reg.name))
        return ValueRole::Address;
    if (named(kIdentifierRegisters, reg.name) || !numeric_type(reg.type))
        return ValueRole::Identifier;
    return std::nullopt;
}

std::optional<ValueRole> variable_role(std::string_view name) {
    if (name.starts_with('$')) name.remove_prefix(1);
    if (name == trace::TraceStateVariables::kThreadName ||
        name == trace::TraceStateVariables::kProcessName)
        return ValueRole::Identifier;
    return std::nullopt;
}

MappedAddresses::MappedAddresses(std::vector<std::uint64_t> addresses)
    : addresses_(std::move(addresses)) {
    std::erase_if(addresses_, [](std::uint64_t a) { return !in_user_space(a); });
    std::sort(addresses_.begin(), addresses_.end());
    addresses_.erase(std::unique(addresses_.begin(), addresses_.end()), addresses_.end());
}

bool MappedAddresses::near(std::uint64_t value) const {
    const std::uint64_t distance = value < kLowAddressEnd ? kNearMappedLow : kNearMapped;
    auto above = std::lower_bound(addresses_.begin(), addresses_.end(), value);
    if (above != addresses_.end() && *above - value <= distance) return true;
    return above != addresses_.begin() && value - *std::prev(above) <= distance;
}

// Nothing in a trace file types a collected integer (the actions collect bytes), so pointers
// are told from quantities by their values: samples look like addresses when most of them
// (nine in ten of the non-zero ones: zero is NULL) are user-space addresses (kUserStart,
// kUserEnd) near one the trace shows mapped (kNearMapped). Their steps tell nothing: a
// pointer walking an array moves by its element's size, as a counter moves by small steps,
// and a clock moves by large ones.
bool looks_like_addresses(std::span<const std::uint64_t> samples, const MappedAddresses& mapped) {
    std::size_t nonzero = 0, addresses = 0;
    for (std::uint64_t v : samples) {
        if (v == 0) continue;
        ++nonzero;
        if (in_user_space(v) && mapped.near(v)) ++addresses;
    }
    return nonzero != 0 && addresses * 10 >= nonzero * 9;
}

} // namespace tpagent::tpdump
