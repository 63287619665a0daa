// Fast-tracepoint sites: a jump from the program's code to a pad that calls the in-process
// collector, built by the architecture and mapped near the code (PIE and shared libraries).
// Patching happens only while every thread is stopped (all-stop), so no thread can run a
// half-written jump; the one hazard left is a thread stopped inside the bytes the jump
// replaces, which is moved to the same instruction's copy in the pad.
#include "agent/inferior.hpp"
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::agent {

namespace {
constexpr std::size_t kCodeWindow = 32; // enough for whole instructions covering the jump
}

void Inferior::move_threads(
    std::uint64_t from, std::size_t len,
    const std::function<std::optional<std::uint64_t>(std::uint64_t)>& move) {
    for (auto& [tid, t] : threads_) {
        if (!t.stopped) continue;
        auto s = snapshot(tid, false);
        if (!s) continue;
        const std::uint64_t pc = arch_.pc(**s);
        if (pc < from || pc - from >= len) continue;
        if (auto to = move(pc)) {
            spdlog::debug("thread {}: pc 0x{:x} -> 0x{:x}", tid, pc, *to);
            arch_.set_pc(**s, *to);
            (void)arch_.write_general_registers(tid, **s);
        }
    }
}

Status Inferior::add_fast_site(std::uint64_t addr, std::uint64_t collector, std::uint64_t argument,
                               bool save_vector_state) {
    if (fast_sites_.count(addr)) return ok_status();
    if (sites_.count(addr))
        return make_error(ErrorCode::NotAllowed, "a trap tracepoint is installed there");
    std::vector<std::uint8_t> code(kCodeWindow);
    auto got = read_memory(addr, code); // breakpoints hidden: the program's own code
    if (!got) return got.error();
    code.resize(*got);

    arch::JumpPadRequest request;
    request.tracepoint_address = addr;
    request.collector = collector;
    request.argument = argument;
    request.original_code = code;
    request.save_vector_state = save_vector_state;
    // Emit once at a provisional address for the size, then for the real pad.
    request.pad_address = addr;
    auto probe = arch_.emit_jump_pad(request);
    if (!probe) return probe.error();
    auto pad = allocate_pad(addr, probe->code.size() + 64);
    if (!pad) return pad.error();
    request.pad_address = *pad;
    auto emitted = arch_.emit_jump_pad(request);
    if (!emitted) return emitted.error();
    if (auto w = raw_write(*pad, emitted->code); !w) return w;

    // A user breakpoint inside the span would be overwritten: its shadow must become the
    // patch, so removing the breakpoint later restores the jump, not the old code.
    for (std::size_t i = 0; i < emitted->patch.size(); ++i)
        if (breakpoints_->inserted_at(addr + i))
            return make_error(ErrorCode::NotAllowed,
                              fmt::format("a breakpoint at 0x{:x} is inside the {} bytes a fast "
                                          "tracepoint replaces",
                                          addr + i, emitted->patch.size()));

    FastSite site{
        *pad, emitted->relocated_offset, std::move(emitted->relocated),
        std::vector<std::uint8_t>(
            code.begin(), code.begin() + static_cast<std::ptrdiff_t>(emitted->patch.size()))};
    const std::uint64_t relocated = *pad + site.relocated_offset;
    move_threads(addr + 1, site.code.covered - 1, [&](std::uint64_t pc) {
        auto off = arch::pad_offset_of(site.code, pc - addr);
        return off ? std::optional(relocated + *off) : std::nullopt;
    });
    if (auto w = raw_write(addr, emitted->patch); !w) return w;
    spdlog::debug("fast tracepoint at 0x{:x}: pad 0x{:x}, {} bytes replaced", addr, *pad,
                  emitted->patch.size());
    fast_sites_[addr] = std::move(site);
    return ok_status();
}

Result<std::uint64_t> Inferior::place_code(std::uint64_t near, std::span<const std::uint8_t> code) {
    auto at = allocate_pad(near, code.size());
    if (!at) return at.error();
    if (auto w = raw_write(*at, code); !w) return w.error();
    return *at;
}

void Inferior::remove_fast_site(std::uint64_t addr) {
    auto it = fast_sites_.find(addr);
    if (it == fast_sites_.end()) return;
    const FastSite& site = it->second;
    if (alive_) {
        (void)raw_write(addr, site.original);
        // Threads in the relocated copy go back to the original instruction; threads in the
        // pad's own code finish it and jump back, into the restored code.
        const std::uint64_t relocated = site.pad + site.relocated_offset;
        move_threads(relocated, site.code.code.size(), [&](std::uint64_t pc) {
            auto off = arch::from_offset_of(site.code, pc - relocated);
            return off ? std::optional(addr + *off) : std::nullopt;
        });
    }
    fast_sites_.erase(it);
}

void Inferior::remove_all_fast_sites() {
    while (!fast_sites_.empty())
        remove_fast_site(fast_sites_.begin()->first);
}

} // namespace tpagent::agent
