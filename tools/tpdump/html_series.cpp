// The values the HTML report plots over time: trace state variables, integers in named
// memory, registers that change (the ones that never do are listed once instead).
#include "tools/tpdump/html_report_parts.hpp"

#include "tools/tpdump/frame_details.hpp"
#include "tools/tpdump/html_memory_scalars.hpp"
#include <algorithm>
#include <map>

namespace tpagent::tpdump {

namespace {

// More plots than this are left out (the page says how many).
constexpr std::size_t kMaxSeries = 400;

enum class SeriesKind : std::uint8_t { Variable, NamedMemory, Register, MemoryByAddress };

struct Series {
    SeriesKind kind;
    std::string name;
    std::uint32_t tracepoint = 0; // memory: the tracepoint whose source names it
    std::vector<std::size_t> frames;
    std::vector<std::int64_t> values;                     // variables and memory
    std::vector<std::span<const std::uint8_t>> registers; // registers: their bytes

    // A frame's value; a later one of the same frame replaces it, as the last block wins.
    template <class T> void add(std::vector<T>& to, std::size_t frame, T value) {
        if (!frames.empty() && frames.back() == frame) {
            to.back() = value;
            return;
        }
        frames.push_back(frame);
        to.push_back(value);
    }
};

// Series in order of first appearance, found by key.
class SeriesSet {
  public:
    Series& get(SeriesKind kind, const std::string& name, std::uint32_t tracepoint) {
        auto [it, added] = index_.emplace(std::tuple(kind, name, tracepoint), all_.size());
        if (added) all_.push_back(Series{kind, name, tracepoint, {}, {}, {}});
        return all_[it->second];
    }
    std::vector<Series>& all() { return all_; }

  private:
    std::map<std::tuple<SeriesKind, std::string, std::uint32_t>, std::size_t> index_;
    std::vector<Series> all_;
};

bool constant(const Series& s) {
    for (const auto& r : s.registers)
        if (!std::equal(r.begin(), r.end(), s.registers.front().begin(), s.registers.front().end()))
            return false;
    return true;
}

nlohmann::json series_values(const Series& s) {
    nlohmann::json values = nlohmann::json::array();
    if (s.kind == SeriesKind::Register) {
        for (const auto& r : s.registers)
            values.push_back(register_hex(r));
        return values;
    }
    for (std::int64_t v : s.values)
        values.push_back(integer_json(v));
    return values;
}

const char* kind_name(SeriesKind kind) {
    switch (kind) {
    case SeriesKind::Variable:
        return "variable";
    case SeriesKind::NamedMemory:
    case SeriesKind::MemoryByAddress:
        return "memory";
    case SeriesKind::Register:
        return "register";
    }
    return "";
}

} // namespace

nlohmann::json series_json(const tracefile::TraceFile& file, const Options& options,
                           const ReportFrames& shown) {
    SeriesSet set;
    for (std::size_t i = 0; i < shown.frames.size(); ++i) {
        const tracefile::Frame& f = *shown.frames[i];
        std::size_t m = 0;
        for (const trace::FrameBlock& b : f.blocks) {
            if (b.type == 'V' && b.variable != shown.time.variable) {
                Series& s = set.get(SeriesKind::Variable, variable_name(file, b.variable), 0);
                s.add(s.values, i, b.value);
            } else if (b.type == 'M') {
                const std::string& name = shown.block_names[i][m++];
                auto kind = name.empty() ? SeriesKind::MemoryByAddress : SeriesKind::NamedMemory;
                for (MemoryScalar& scalar : memory_scalars(name, b.address, b.data)) {
                    Series& s = set.get(kind, scalar.label, f.tracepoint);
                    s.add(s.values, i, scalar.value);
                }
            }
        }
        if (auto block = f.registers())
            for (const ShownRegister& r : shown_registers(file, *block, options, false))
                if (r.info->size <= 8) {
                    Series& s = set.get(SeriesKind::Register, r.info->name, 0);
                    s.add(s.registers, i, r.bytes);
                }
    }

    std::vector<Series>& all = set.all();
    std::stable_sort(all.begin(), all.end(),
                     [](const Series& a, const Series& b) { return a.kind < b.kind; });
    nlohmann::json series = nlohmann::json::array(), constants = nlohmann::json::array(),
                   register_names = nlohmann::json::array(); // in the description's order
    std::size_t left_out = 0;
    for (const Series& s : all) {
        if (s.kind == SeriesKind::Register) register_names.push_back(s.name);
        if (s.kind == SeriesKind::Register && constant(s)) {
            constants.push_back({s.name, register_hex(s.registers.front())});
            continue;
        }
        if (series.size() == kMaxSeries) {
            ++left_out;
            continue;
        }
        nlohmann::json j = {{"kind", kind_name(s.kind)},
                            {"name", s.name},
                            {"frames", s.frames},
                            {"values", series_values(s)}};
        if (s.kind == SeriesKind::NamedMemory || s.kind == SeriesKind::MemoryByAddress)
            j["tracepoint"] = s.tracepoint;
        series.push_back(std::move(j));
    }
    return {{"series", series},
            {"constantRegisters", constants},
            {"registerNames", register_names},
            {"seriesLeftOut", left_out}};
}

} // namespace tpagent::tpdump
