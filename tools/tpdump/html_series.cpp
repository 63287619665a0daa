// The values the HTML report plots over time: trace state variables, integers in named
// memory, registers that change (the ones that never do are listed once instead). Memory and
// registers are per tracepoint: the same register or expression means something else at
// another place in the program. Each series has a role (html_value_roles): quantities are
// drawn as lines, addresses and identifiers as labels.
#include "tools/tpdump/html_report_parts.hpp"

#include "tools/tpdump/frame_details.hpp"
#include "tools/tpdump/html_collected_registers.hpp"
#include "tools/tpdump/html_memory_scalars.hpp"
#include "tools/tpdump/html_value_roles.hpp"
#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <tuple>

namespace tpagent::tpdump {

namespace {

// More plots than this are left out (the page says how many).
constexpr std::size_t kMaxSeries = 400;

enum class SeriesKind : std::uint8_t { Variable, NamedMemory, Register, MemoryByAddress };

struct Series {
    SeriesKind kind;
    std::string name;
    std::uint32_t tracepoint = 0; // memory and registers: the tracepoint that collected them
    const tracefile::RegisterInfo* reg = nullptr;         // registers
    std::size_t size = 8;                                 // bytes of each value
    std::vector<std::size_t> frames;                      // indices into ReportFrames::frames
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
        if (added) all_.push_back(Series{kind, name, tracepoint});
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

std::uint64_t little_endian(std::span<const std::uint8_t> bytes) {
    std::uint64_t v = 0;
    for (std::size_t i = bytes.size(); i-- > 0;)
        v = v << 8 | bytes[i];
    return v;
}

// The samples of `s` as unsigned integers, as an address would be read.
std::vector<std::uint64_t> samples(const Series& s) {
    std::vector<std::uint64_t> out;
    for (const auto& r : s.registers)
        out.push_back(little_endian(r));
    for (std::int64_t v : s.values)
        out.push_back(static_cast<std::uint64_t>(v));
    return out;
}

// The bytes of an address on the target: its program counter's size.
std::size_t pointer_size(const tracefile::TraceFile& file) {
    const auto& layout = file.register_layout();
    return layout && layout->pc() ? layout->pc()->size : 8;
}

// The addresses the trace shows mapped (MappedAddresses): its tracepoints, the memory its
// frames collected and their pointer registers.
MappedAddresses mapped_addresses(const tracefile::TraceFile& file, const ReportFrames& shown) {
    std::vector<std::uint64_t> out;
    for (const trace::Tracepoint& tp : file.tracepoints())
        out.push_back(tp.definition.key.address);
    std::vector<const tracefile::RegisterInfo*> pointers;
    if (const auto& layout = file.register_layout())
        for (const tracefile::RegisterInfo& reg : layout->registers)
            if (reg.size <= 8 && register_role(reg) == ValueRole::Address) pointers.push_back(&reg);
    for (const tracefile::Frame* f : shown.frames) {
        for (const trace::FrameBlock& b : f->blocks)
            if (b.type == 'M') out.push_back(b.address);
        if (auto block = f->registers())
            for (const tracefile::RegisterInfo* reg : pointers)
                if (auto v = tracefile::register_value(*reg, *block)) out.push_back(*v);
    }
    return MappedAddresses(std::move(out));
}

ValueRole role_of(const Series& s, const MappedAddresses& mapped, std::size_t pointer_bytes) {
    if (s.reg)
        if (auto role = register_role(*s.reg)) return *role;
    if (s.kind == SeriesKind::Variable)
        if (auto role = variable_role(s.name)) return *role;
    if (s.size != pointer_bytes) return ValueRole::Quantity; // too narrow to hold an address
    return looks_like_addresses(samples(s), mapped) ? ValueRole::Address : ValueRole::Quantity;
}

// The variables and memory scalars of frame `i`.
void add_values(const tracefile::TraceFile& file, const ReportFrames& shown, std::size_t i,
                SeriesSet& set) {
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
                s.size = scalar.size;
                s.add(s.values, i, scalar.value);
            }
        }
    }
}

// The registers of up to 8 bytes that frame `i`'s actions collected.
void add_registers(const tracefile::TraceFile& file, const Options& options,
                   const ReportFrames& shown, std::size_t i, SeriesSet& set) {
    const tracefile::Frame& f = *shown.frames[i];
    auto block = f.registers();
    if (!block) return;
    for (const ShownRegister& r : shown_registers(file, *block, options, false)) {
        if (r.info->size > 8 || !register_collected(shown.register_masks[i], *r.info)) continue;
        Series& s = set.get(SeriesKind::Register, r.info->name, f.tracepoint);
        s.reg = r.info;
        s.size = r.info->size;
        s.add(s.registers, i, r.bytes);
    }
}

// The registers some series holds, in the description's order (the frame panel's order).
nlohmann::json register_names(const tracefile::TraceFile& file, const std::vector<Series>& all) {
    std::set<std::string_view> seen;
    for (const Series& s : all)
        if (s.kind == SeriesKind::Register) seen.insert(s.name);
    nlohmann::json out = nlohmann::json::array();
    if (const auto& layout = file.register_layout())
        for (const tracefile::RegisterInfo& reg : layout->registers)
            if (seen.count(reg.name)) out.push_back(reg.name);
    return out;
}

} // namespace

nlohmann::json series_json(const tracefile::TraceFile& file, const Options& options,
                           const ReportFrames& shown) {
    SeriesSet set;
    for (std::size_t i = 0; i < shown.frames.size(); ++i) {
        add_values(file, shown, i, set);
        add_registers(file, options, shown, i, set);
    }

    // Grouped by kind, then by tracepoint in number order (each in order of appearance).
    std::vector<Series>& all = set.all();
    std::stable_sort(all.begin(), all.end(), [](const Series& a, const Series& b) {
        return std::tie(a.kind, a.tracepoint) < std::tie(b.kind, b.tracepoint);
    });
    const MappedAddresses mapped = mapped_addresses(file, shown);
    const std::size_t pointer_bytes = pointer_size(file);
    nlohmann::json series = nlohmann::json::array(), constants = nlohmann::json::array();
    std::size_t left_out = 0;
    for (const Series& s : all) {
        if (s.kind == SeriesKind::Register && constant(s)) {
            constants.push_back({{"tracepoint", s.tracepoint},
                                 {"name", s.name},
                                 {"value", register_hex(s.registers.front())}});
            continue;
        }
        if (series.size() == kMaxSeries) {
            ++left_out;
            continue;
        }
        nlohmann::json j = {{"kind", kind_name(s.kind)},
                            {"name", s.name},
                            {"role", role_name(role_of(s, mapped, pointer_bytes))},
                            {"frames", s.frames},
                            {"values", series_values(s)}};
        if (s.kind != SeriesKind::Variable) j["tracepoint"] = s.tracepoint;
        series.push_back(std::move(j));
    }
    return {{"series", series},
            {"constantRegisters", constants},
            {"registerNames", register_names(file, all)},
            {"seriesLeftOut", left_out}};
}

} // namespace tpagent::tpdump
