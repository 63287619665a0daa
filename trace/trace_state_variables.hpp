// Trace state variables: defined by QTDV, read and written by agent expressions (getv/setv),
// reported by qTV and uploaded by qTfV/qTsV.
//
// The built-in `trace_timestamp` (number 1, as gdb expects from a stub that offers it) has no
// stored value: reading it asks the clock given at construction. It is offered again after
// clear(), so gdb sees it on every connect and re-sends it with QTDV after QTinit.
//
// Values are std::atomic so collectors on several threads may get/set concurrently; defining
// and clearing are for the packet thread only.
#pragma once
#include "trace/upload_cursor.hpp"
#include "base/result.hpp"
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpagent::trace {

// qTV reply for a value: `V<value hex>` (two's complement), or `U` when unknown (no such
// variable, or not collected in the selected trace frame).
std::string format_tsv_value(std::optional<std::int64_t> value);

class TraceStateVariables {
  public:
    using Clock = std::function<std::int64_t()>;
    static constexpr std::uint32_t kTimestampNumber = 1;
    static constexpr std::string_view kTimestampName = "trace_timestamp";

    // clock: the value of $trace_timestamp (gdbserver: microseconds, same clock as the
    // qTStatus start/stop times).
    explicit TraceStateVariables(Clock clock);

    // QTDV payload `<num>:<value>:<builtin>:<hexname>`. Redefinition replaces. A builtin
    // variable named trace_timestamp reads the clock, whatever its number.
    Status define(std::string_view payload);
    // QTinit: forget every variable but the built-in timestamp.
    void clear();
    // QTStart: every variable back to its initial value.
    void reset_values();

    bool contains(std::uint32_t number) const { return vars_.count(number) != 0; }
    std::optional<std::int64_t> get(std::uint32_t number) const;
    // False for an unknown variable or the timestamp (read-only).
    bool set(std::uint32_t number, std::int64_t value);

    // Every defined variable's number, ascending; and whether it is the clock.
    std::vector<std::uint32_t> numbers() const;
    bool is_timestamp(std::uint32_t number) const;

    // qTV reply: `V<value hex>` (two's complement) or `U` for an unknown variable.
    std::string value_reply(std::uint32_t number) const;
    // qTfV: pieces `<num>:<initial value>:<builtin>:<hexname>`, ordered by number.
    UploadCursor upload() const;

  private:
    struct Variable {
        std::int64_t initial = 0;
        bool builtin = false;
        bool timestamp = false;
        std::string name;
        std::atomic<std::int64_t> value{0};
    };
    Variable& install(std::uint32_t number, std::int64_t initial, bool builtin, std::string name);

    Clock clock_;
    std::map<std::uint32_t, Variable> vars_;
};

} // namespace tpagent::trace
