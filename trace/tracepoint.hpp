// A tracepoint definition as gdb downloads it with QTDP / QTDPsrc, plus its run counters.
// Pure data: parsing and printing live in tracepoint_codec.hpp, bookkeeping in
// tracepoint_table.hpp.
#pragma once
#include "bytecode/program.hpp"
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tpagent::trace {

// gdb names a tracepoint location by number and address; one number may have several
// addresses (one per location), so both form the key.
struct TracepointKey {
    std::uint32_t number = 0;
    std::uint64_t address = 0;
    // NOLINTNEXTLINE(modernize-use-nullptr): the defaulted comparison has no pointer in it
    auto operator<=>(const TracepointKey&) const = default;
};

// Trace frames store the tracepoint number in 16 bits and 0 ends a trace file, so only
// 1..kMaxTracepointNumber can be recorded.
inline constexpr std::uint32_t kMaxTracepointNumber = 0xffff;

// `R<mask>`: bit i set = collect gdb register i. Kept as little-endian bytes (byte 0 holds
// registers 0..7) without trailing zero bytes, so equal masks compare equal. Bits beyond the
// target's registers are kept but mean nothing (a frame's R block always holds every
// register).
struct RegisterMask {
    std::vector<std::uint8_t> bytes;
    bool test(unsigned regnum) const {
        return regnum / 8 < bytes.size() && (bytes[regnum / 8] >> (regnum % 8) & 1) != 0;
    }
    bool operator==(const RegisterMask&) const = default;
};

// `M<basereg>,<offset>,<len>`: len bytes at register basereg + offset, or at offset itself
// when basereg is -1. gdb prints a negative offset as 64-bit two's complement.
struct MemoryRange {
    static constexpr std::int32_t kAbsolute = -1;
    std::int32_t base_register = kAbsolute;
    std::uint64_t offset = 0; // wraps on addition, like the target's address arithmetic
    std::uint32_t length = 0;
    bool absolute() const { return base_register == kAbsolute; }
    bool operator==(const MemoryRange&) const = default;
};

// An agent expression (`X<len>,<bytes>` action or the tracepoint condition). The raw bytes
// are what gdb sent and what the upload prints; `program` is their validated form.
struct Expression {
    std::vector<std::uint8_t> bytes;
    bytecode::Program program;
    bool operator==(const Expression& other) const { return bytes == other.bytes; }
};

// `L`: collect static tracepoint user data ($_sdata).
struct StaticData {
    bool operator==(const StaticData&) const = default;
};

using Action = std::variant<RegisterMask, MemoryRange, Expression, StaticData>;

// One action string = the actions of one `QTDP:-` packet, in order. Kept grouped as sent so
// the upload can send each string back as one piece of the same (fitting) size.
struct ActionString {
    std::vector<Action> actions;
    bool operator==(const ActionString&) const = default;
};

enum class TracepointKind : std::uint8_t { Trap, Fast, Static };

// One QTDPsrc string, stored as received; type is "at", "cond" or "cmd".
struct SourceString {
    std::string type;
    std::uint64_t start = 0;  // offset of text in the whole string (gdb always sends 0)
    std::uint64_t length = 0; // length of the whole string
    std::string text;         // decoded from hex
    bool operator==(const SourceString&) const = default;
};

// What a definition carries; two definitions of the same key are "identical" when all of
// this matches (sources are extra information and not compared).
struct TracepointDefinition {
    TracepointKey key;
    bool enabled = true;
    std::uint64_t step_count = 0; // while-stepping steps
    std::uint64_t pass_count = 0; // stop the trace after this many hits (0 = never)
    TracepointKind kind = TracepointKind::Trap;
    // `F<len>`: bytes the jump may replace; 0 in trace files gdb wrote (gdb does not keep it).
    std::uint32_t fast_insn_length = 0;
    std::optional<Expression> condition;
    std::vector<ActionString> actions;          // on each hit
    std::vector<ActionString> stepping_actions; // on each while-stepping step
    bool operator==(const TracepointDefinition&) const = default;
};

// Per-run counters for qTP (`V<hits>:<usage>`). Single-threaded for now; the collector that
// appends from several threads will need to update these atomically.
struct TracepointCounters {
    std::uint64_t hits = 0;       // while-stepping steps do not count as hits
    std::uint64_t bytes_used = 0; // frame bytes, steps included
};

struct Tracepoint {
    TracepointDefinition definition;
    std::vector<SourceString> sources;
    TracepointCounters counters;
};

} // namespace tpagent::trace
