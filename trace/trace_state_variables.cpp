#include "trace/trace_state_variables.hpp"

#include "protocol/hex.hpp"
#include <fmt/format.h>

namespace tpagent::trace {

TraceStateVariables::TraceStateVariables(Clock micros, Clock nanos)
    : micros_(std::move(micros)), nanos_(std::move(nanos)) {
    clear();
}

TraceStateVariables::Variable& TraceStateVariables::install(std::uint32_t number,
                                                            std::int64_t initial, bool builtin,
                                                            std::string name) {
    vars_.erase(number); // atomics cannot be assigned as a whole; rebuild the node
    Variable& v = vars_[number];
    v.initial = initial;
    v.builtin = builtin;
    v.reading = name == kTimestampNsName            ? Reading::Nanos
                : name == kThreadName               ? Reading::ThreadId
                : name == kProcessName              ? Reading::ProcessId
                : builtin && name == kTimestampName ? Reading::Micros
                                                    : Reading::Stored;
    v.name = std::move(name);
    v.value.store(initial, std::memory_order_relaxed);
    return v;
}

void TraceStateVariables::define(VariableDefinition variable) {
    install(variable.number, variable.initial, variable.builtin, std::move(variable.name));
}

void TraceStateVariables::clear() {
    vars_.clear();
    install(kTimestampNumber, 0, true, std::string(kTimestampName));
}

void TraceStateVariables::reset_values() {
    for (auto& [number, v] : vars_)
        v.value.store(v.initial, std::memory_order_relaxed);
}

std::optional<std::int64_t> TraceStateVariables::get(std::uint32_t number,
                                                     std::optional<Collecting> collecting) const {
    auto it = vars_.find(number);
    if (it == vars_.end()) return std::nullopt;
    switch (it->second.reading) {
    case Reading::Stored:
        return it->second.value.load(std::memory_order_relaxed);
    case Reading::Micros:
        return micros_ ? micros_() : 0;
    case Reading::Nanos:
        return nanos_ ? nanos_() : 0;
    case Reading::ThreadId:
        if (!collecting) return std::nullopt;
        return collecting->thread;
    case Reading::ProcessId:
        if (!collecting) return std::nullopt;
        return collecting->process;
    }
    return std::nullopt;
}

bool TraceStateVariables::set(std::uint32_t number, std::int64_t value) {
    auto it = vars_.find(number);
    if (it == vars_.end() || it->second.reading != Reading::Stored) return false;
    it->second.value.store(value, std::memory_order_relaxed);
    return true;
}

std::string format_tsv_value(std::optional<std::int64_t> value) {
    if (!value) return "U";
    return "V" + protocol::hex_u64(static_cast<std::uint64_t>(*value));
}

std::string TraceStateVariables::value_reply(std::uint32_t number) const {
    return format_tsv_value(get(number));
}

UploadCursor TraceStateVariables::upload() const {
    std::vector<std::string> pieces;
    // Newest first, as gdbserver: gdb prepends each one it reads, so its list (and `info
    // tvariables`) comes out in the order they were defined.
    for (auto it = vars_.rbegin(); it != vars_.rend(); ++it) {
        const auto& [number, v] = *it;
        pieces.push_back(fmt::format("{:x}:{:x}:{}:{}", number,
                                     static_cast<std::uint64_t>(v.initial), v.builtin ? 1 : 0,
                                     protocol::to_hex(std::string_view(v.name))));
    }
    return UploadCursor(std::move(pieces));
}

std::vector<std::uint32_t> TraceStateVariables::numbers() const {
    std::vector<std::uint32_t> out;
    out.reserve(vars_.size());
    for (const auto& [number, v] : vars_)
        out.push_back(number);
    return out;
}

TraceStateVariables::Reading TraceStateVariables::reading(std::uint32_t number) const {
    auto it = vars_.find(number);
    return it == vars_.end() ? Reading::Stored : it->second.reading;
}

} // namespace tpagent::trace
