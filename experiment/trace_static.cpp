// Static tracepoints (`strace`): each probes the SDT marker at its address. They are collected
// through trap sites like `trace` tracepoints; what is theirs is the marker's semaphore, raised
// while the run lasts so that probes guarded by it fire, and `$_sdata`, the marker's arguments.
#include "experiment/trace_experiment.hpp"
#include "trace/static_data.hpp"
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::experiment {

namespace {

// Adds `delta` to the 2-byte semaphore at `addr`.
Status add_to_semaphore(process::Target& inferior, std::uint64_t addr, int delta) {
    std::uint8_t bytes[2] = {};
    auto got = inferior.read_memory(addr, bytes);
    if (!got || *got != sizeof bytes)
        return make_error(ErrorCode::MemoryAccess,
                          fmt::format("cannot read the semaphore at 0x{:x}", addr));
    const auto value = static_cast<std::uint16_t>((bytes[0] | bytes[1] << 8) + delta);
    const std::uint8_t now[2] = {static_cast<std::uint8_t>(value),
                                 static_cast<std::uint8_t>(value >> 8)};
    return inferior.write_memory(addr, now);
}

} // namespace

Status TraceExperiment::probe_marker(process::Target& inferior, const trace::Tracepoint& tp) {
    const std::uint64_t addr = tp.definition.key.address;
    if (probed_markers_.count(addr)) return ok_status(); // another tracepoint probes it
    for (process::StaticMarker& m : inferior.static_markers()) {
        if (m.address != addr) continue;
        if (m.semaphore) {
            if (auto s = add_to_semaphore(inferior, m.semaphore, 1); !s) return s;
            raised_semaphores_.push_back(m.semaphore);
        }
        probed_markers_.emplace(addr, std::move(m));
        return ok_status();
    }
    return make_error(ErrorCode::NotFound,
                      fmt::format("static tracepoint {}: no static tracepoint marker at 0x{:x}",
                                  tp.definition.key.number, addr));
}

void TraceExperiment::lower_semaphores(process::Target* inferior) {
    if (inferior && inferior->alive())
        for (std::uint64_t addr : raised_semaphores_)
            if (auto s = add_to_semaphore(*inferior, addr, -1); !s)
                spdlog::debug("{}", s.error().text);
    raised_semaphores_.clear();
    probed_markers_.clear();
}

std::vector<std::uint8_t> TraceExperiment::static_data(
    std::uint64_t addr, const std::function<bool(int regnum, std::uint64_t* value)>& read_register,
    process::Target& inferior) const {
    auto it = probed_markers_.find(addr);
    if (it == probed_markers_.end()) return {};
    auto read_memory = [&](std::uint64_t at, void* out, unsigned size) {
        auto got = inferior.read_memory(at, std::span(static_cast<std::uint8_t*>(out), size));
        return got && *got == size;
    };
    std::vector<std::uint8_t> text(1024);
    trace::StaticDataWriter writer(reinterpret_cast<char*>(text.data()), text.size());
    for (const arch::SdtArgument& a : it->second.decoded) {
        std::uint64_t value = 0;
        if (arch::sdt_argument_value(a, read_register, read_memory, &value))
            writer.argument(value, a.size, a.is_signed);
        else
            writer.unknown();
    }
    text.resize(writer.finish());
    return text;
}

} // namespace tpagent::experiment
