// What a collected value is, for how the HTML report draws it: a quantity is a line over
// time; an address or an identifier (a thread id, a segment selector, flag bits) only names
// something, so its order and distances mean nothing: the page shows which value each frame
// had, as labels, and draws no line through them.
#pragma once
#include "tools/tracefile/trace_file.hpp"
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace tpagent::tpdump {

enum class ValueRole : std::uint8_t { Quantity, Address, Identifier };

const char* role_name(ValueRole role); // "quantity", "address", "identifier"

// A register's role by what the architecture uses it for, whatever value it holds; nothing
// for a general register, which may hold anything (look at its values).
std::optional<ValueRole> register_role(const tracefile::RegisterInfo& reg);

// A trace state variable's role by its name: `$trace_thread` is a thread id, `$trace_pid` a
// process id.
std::optional<ValueRole> variable_role(std::string_view name);

// Addresses the trace shows to be mapped in the traced program: its tracepoints (code), its
// collected memory (data, heap, stacks) and the values of its pointer registers (stacks,
// code, TLS).
class MappedAddresses {
  public:
    // The addresses in any order; those outside user space are left out.
    explicit MappedAddresses(std::vector<std::uint64_t> addresses);
    // Whether `value` lies near enough one of them to be in the same mapping (see
    // kNearMapped in html_value_roles.cpp).
    bool near(std::uint64_t value) const;

  private:
    std::vector<std::uint64_t> addresses_; // sorted, unique
};

// Whether the samples of a pointer-sized integer, in frame order, look like addresses rather
// than quantities (the heuristic is explained in html_value_roles.cpp).
bool looks_like_addresses(std::span<const std::uint64_t> samples, const MappedAddresses& mapped);

} // namespace tpagent::tpdump
