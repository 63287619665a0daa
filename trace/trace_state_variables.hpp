// Trace state variables: defined by QTDV, read and written by agent expressions (getv/setv),
// reported by qTV and uploaded by qTfV/qTsV.
//
// The built-in `trace_timestamp` (number 1, as gdb expects from a stub that offers it) has no
// stored value: reading it asks the clock given at construction, microseconds since the epoch
// as gdbserver's (the qTStatus start and stop times use the same clock). It is offered again
// after clear(), so gdb sees it on every connect and re-sends it after QTinit. A variable the
// user names trace_timestamp_ns (`tvariable $trace_timestamp_ns`) reads a monotonic clock in
// nanoseconds: tpagent's finer clock, not offered, so gdb's listings stay gdbserver's. One
// named trace_thread reads the id (LWP) of the thread that collects it, so a frame can say
// which thread made it (tpdump's per-thread timelines), and one named trace_pid its process's
// (a trace that follows forks collects in several); read outside a hit they are unknown.
//
// Values are std::atomic so collectors on several threads may get/set concurrently; defining
// and clearing are for the packet thread only.
#pragma once
#include "trace/upload_cursor.hpp"
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpagent::trace {

// One variable as QTDV defines it (parse_variable_definition, tracepoint_codec.hpp).
struct VariableDefinition {
    std::uint32_t number = 0;
    std::int64_t initial = 0;
    bool builtin = false;
    std::string name;
};

// qTV reply for a value: `V<value hex>` (two's complement), or `U` when unknown (no such
// variable, or not collected in the selected trace frame).
std::string format_tsv_value(std::optional<std::int64_t> value);

class TraceStateVariables {
  public:
    using Clock = std::function<std::int64_t()>;
    static constexpr std::uint32_t kTimestampNumber = 1;
    static constexpr std::string_view kTimestampName = "trace_timestamp";
    static constexpr std::string_view kTimestampNsName = "trace_timestamp_ns";
    static constexpr std::string_view kThreadName = "trace_thread";
    static constexpr std::string_view kProcessName = "trace_pid";
    // Where a variable's value comes from (the in-process agent's table uses the same values):
    // its store, a clock, the collecting thread or its process.
    enum class Reading : std::uint32_t {
        Stored = 0,
        Micros = 1,
        Nanos = 2,
        ThreadId = 3,
        ProcessId = 4
    };
    // Who collects: the thread and its process ($trace_thread, $trace_pid).
    struct Collecting {
        std::int64_t thread = 0;
        std::int64_t process = 0;
    };

    // micros: $trace_timestamp; nanos: $trace_timestamp_ns.
    TraceStateVariables(Clock micros, Clock nanos);

    // QTDV. Redefinition replaces. A builtin variable named trace_timestamp, or any named
    // trace_timestamp_ns, reads its clock; one named trace_thread reads the collecting thread,
    // one named trace_pid its process.
    void define(VariableDefinition variable);
    // QTinit: forget every variable but the built-in timestamp.
    void clear();
    // QTStart: every variable back to its initial value.
    void reset_values();

    bool contains(std::uint32_t number) const { return vars_.count(number) != 0; }
    // `collecting`: for $trace_thread and $trace_pid (unknown without one).
    std::optional<std::int64_t> get(std::uint32_t number,
                                    std::optional<Collecting> collecting = std::nullopt) const;
    // False for an unknown variable or one that is read, not stored.
    bool set(std::uint32_t number, std::int64_t value);

    // Every defined variable's number, ascending; and where each one's value comes from.
    std::vector<std::uint32_t> numbers() const;
    Reading reading(std::uint32_t number) const;

    // qTV reply: `V<value hex>` (two's complement) or `U` for an unknown variable.
    std::string value_reply(std::uint32_t number) const;
    // qTfV: pieces `<num>:<initial value>:<builtin>:<hexname>`, the highest number first.
    UploadCursor upload() const;

  private:
    struct Variable {
        std::int64_t initial = 0;
        bool builtin = false;
        Reading reading = Reading::Stored;
        std::string name;
        std::atomic<std::int64_t> value{0};
    };
    Variable& install(std::uint32_t number, std::int64_t initial, bool builtin, std::string name);

    Clock micros_, nanos_;
    std::map<std::uint32_t, Variable> vars_;
};

} // namespace tpagent::trace
