// Fast-tracepoint sites: a jump from the program's code to a pad that calls the in-process
// collector, built by the architecture and mapped near the code (PIE and shared libraries).
// Patching happens only while every thread is stopped (all-stop), so no thread can run a
// half-written jump; the one hazard left is a thread stopped inside the bytes the jump
// replaces, which is moved to the same instruction's copy in the pad.
//
// Memory for pads and placed code in the program: mapped by an injected mmap, and reused
// from one trace run to the next once no thread can still be in the old code, so that many
// tstart/tstop cycles keep the program's mappings flat. Nothing is ever unmapped.
#include "process/linux/linux_fast_sites.hpp"
#include "process/linux/guarded_pages.hpp"
#include "process/linux/pad_allocator.hpp"
#include "base/proc_files.hpp"
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <set>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/syscall.h>

namespace tpagent::process {

namespace {
// Whether [a, a + n) and [b, b + m) share a byte.
bool overlaps(std::uint64_t a, std::uint64_t n, std::uint64_t b, std::uint64_t m) {
    return a < b + m && b < a + n;
}
} // namespace

Status LinuxFastSites::move_threads(
    std::uint64_t from, std::size_t len,
    const std::function<std::optional<std::uint64_t>(std::uint64_t)>& move) {
    struct Move {
        pid_t tid;
        std::uint64_t from, to;
    };
    std::vector<Move> moves;
    for (auto& [tid, t] : threads_) {
        if (!t.kernel.stopped()) continue;
        auto s = process_.registers(tid);
        if (!s)
            return make_error(
                ErrorCode::SystemError,
                fmt::format("thread {}: cannot read its pc: {}", tid, s.error().text));
        const std::uint64_t pc = arch_.pc(**s);
        if (pc < from || pc - from >= len) continue;
        if (auto to = move(pc)) moves.push_back({tid, pc, *to});
    }
    for (std::size_t i = 0; i < moves.size(); ++i) {
        const Move& m = moves[i];
        arch::RegisterSnapshot& regs = **process_.registers(m.tid); // cached by the loop above
        arch_.set_pc(regs, m.to);
        if (auto w = arch_.write_general_registers(m.tid, regs); !w) {
            // Put back the ones already moved: either every thread moves or none does.
            arch_.set_pc(regs, m.from);
            for (std::size_t j = 0; j < i; ++j) {
                arch::RegisterSnapshot& done = **process_.registers(moves[j].tid);
                arch_.set_pc(done, moves[j].from);
                if (auto back = arch_.write_general_registers(moves[j].tid, done); !back)
                    spdlog::warn("thread {}: cannot move the pc back to 0x{:x}: {}", moves[j].tid,
                                 moves[j].from, back.error().text);
            }
            return make_error(
                ErrorCode::SystemError,
                fmt::format("thread {}: cannot move the pc: {}", m.tid, w.error().text));
        }
        spdlog::debug("thread {}: pc 0x{:x} -> 0x{:x}", m.tid, m.from, m.to);
    }
    return ok_status();
}

void LinuxFastSites::move_out_of_copy(std::uint64_t addr, const FastSite& site) {
    const std::uint64_t relocated = site.pad + site.relocated_offset;
    auto out = [&](std::uint64_t pc) {
        return arch::original_address(site.code, relocated, addr, pc);
    };
    if (auto m = move_threads(relocated, site.code.code.size(), out); !m)
        spdlog::warn("fast tracepoint at 0x{:x}: {}", addr, m.error().text);
}

std::optional<LinuxFastSites::Covering> LinuxFastSites::covering(std::uint64_t addr) const {
    auto it = sites_.upper_bound(addr);
    if (it == sites_.begin()) return std::nullopt;
    --it;
    if (addr - it->first >= it->second.code.covered) return std::nullopt;
    return Covering{it->first, it->second.code.covered, it->second.slot};
}

void LinuxFastSites::for_each_patch(
    const std::function<void(std::uint64_t, std::span<const std::uint8_t>,
                             std::span<const std::uint8_t>)>& fn) const {
    for (const auto& [addr, site] : sites_)
        fn(addr, site.original, site.patch);
    for (const auto& [addr, slot] : slots_)
        fn(addr, slot.original, slot.patch);
}

void LinuxFastSites::hide_jumps(std::uint64_t addr, std::span<std::uint8_t> out) const {
    auto hide = [&](std::uint64_t at, const std::vector<std::uint8_t>& original) {
        for (std::size_t i = 0; i < original.size(); ++i) {
            const std::uint64_t a = at + i;
            if (a >= addr && a - addr < out.size()) out[a - addr] = original[i];
        }
    };
    for (const auto& [site, fast] : sites_)
        hide(site, fast.original);
    for (const auto& [at, slot] : slots_)
        hide(at, slot.original);
}

bool LinuxFastSites::in_jump(std::uint64_t at) const {
    for (const auto& [addr, site] : sites_)
        if (at >= addr && at < addr + site.patch.size()) return true;
    for (const auto& [addr, slot] : slots_)
        if (at >= addr && at < addr + slot.patch.size()) return true;
    return false;
}

// Layers, bottom up: the program's code, fast-tracepoint jumps over it, breakpoint
// instructions over both. A write is of the bottom layer: where it falls on a fast tracepoint's
// displaced instructions, the same bytes keep the jump, and new ones take the jump out, go in,
// and put a rebuilt jump back (its pad runs the new instructions).
Status LinuxFastSites::write_code(std::uint64_t addr, std::span<const std::uint8_t> data) {
    std::vector<std::uint8_t> bytes(data.begin(), data.end());
    std::vector<std::pair<std::uint64_t, FastCall>> rebuild;
    const std::uint64_t end = addr + data.size();
    for (const auto& [site_addr, site] : sites_) {
        const std::uint64_t lo = std::max(addr, site_addr);
        const std::uint64_t hi = std::min(end, site_addr + site.code.covered);
        if (lo >= hi) continue;
        std::vector<std::uint8_t> now(hi - lo);
        auto got = process_.read_program(lo, now);
        const bool same = got && *got == now.size() &&
                          std::equal(now.begin(), now.end(), data.begin() + (lo - addr));
        if (!same) {
            rebuild.emplace_back(site_addr, site.call);
            continue;
        }
        for (std::size_t i = 0; i < site.patch.size(); ++i)
            if (site_addr + i >= addr && site_addr + i < end)
                bytes[site_addr + i - addr] = site.patch[i];
    }
    // A slot keeps its jump under a write of the same bytes; other bytes there rebuild its site.
    for (const auto& [slot_addr, slot] : slots_) {
        const std::uint64_t lo = std::max(addr, slot_addr);
        const std::uint64_t hi = std::min(end, slot_addr + slot.patch.size());
        if (lo >= hi) continue;
        if (!std::equal(slot.original.begin() + static_cast<std::ptrdiff_t>(lo - slot_addr),
                        slot.original.begin() + static_cast<std::ptrdiff_t>(hi - slot_addr),
                        data.begin() + static_cast<std::ptrdiff_t>(lo - addr))) {
            const std::uint64_t owner = slot.site;
            if (auto s = sites_.find(owner);
                s != sites_.end() &&
                std::none_of(rebuild.begin(), rebuild.end(),
                             [owner](const auto& r) { return r.first == owner; }))
                rebuild.emplace_back(owner, s->second.call);
            continue;
        }
        for (std::uint64_t a = lo; a < hi; ++a)
            bytes[a - addr] = slot.patch[a - slot_addr];
    }
    // A carrier over new code gives way: its breakpoint goes back as an instruction over it.
    for (const auto& [site_addr, call] : rebuild)
        if (call.carries_breakpoint)
            uncarry_within(site_addr, 1);
        else
            remove(site_addr);
    std::erase_if(rebuild, [](const auto& r) { return r.second.carries_breakpoint; });
    Status written = write_under_breakpoints(addr, bytes);
    for (const auto& [site_addr, call] : rebuild) {
        auto again = add(site_addr, call.collector, call.argument, call.options);
        if (!again && written)
            written = make_error(again.error().code,
                                 fmt::format("memory written, but the fast tracepoint at 0x{:x} "
                                             "could not be put back over the new code: {}",
                                             site_addr, again.error().text));
    }
    return written;
}

void LinuxFastSites::forget() {
    entries_.forget();
    sites_.clear();
    carrier_pads_.clear();
    moving_.reset();
    pad_pages_.clear();
    placed_code_live_ = false;
    agent_code_.reset();
    go_program_.reset();
    go_thread_words_.reset();
    agent_stack_pool_.reset();
    goroutine_code_words_.reset();
    slots_.clear();
    promised_.clear();
    promised_windows_.clear();
}

Status LinuxFastSites::write_under_breakpoints(std::uint64_t addr,
                                               std::span<const std::uint8_t> data) {
    return memory_.write_raw(addr, memory_.breakpoints().shadow_write(addr, data));
}

Result<LinuxFastSites::FastPad> LinuxFastSites::build_fast_pad(std::uint64_t addr,
                                                               const FastCall& call) {
    if (auto s = process_.check_interruptible(addr); !s) return s.error();
    FastPad out;
    out.call = call;
    auto code = code_at(addr);
    if (!code) return code.error();
    out.code = std::move(*code);

    arch::JumpPadRequest request;
    request.tracepoint_address = addr;
    request.collector = call.collector;
    request.argument = call.argument;
    request.original_code = out.code;
    request.options = call.options;
    auto stacks = agent_stacks(addr);
    if (!stacks) return stacks.error();
    request.agent_stacks = *stacks;
    // smaps is read only where it can matter: a landing pad (never on x86-64).
    request.branch_target_guarded =
        arch_.branch_target_landing_pad(out.code) && branch_target_guarded(process_.pid(), addr);
    // Emit once at a provisional address for the size, then for the real pad.
    // (What is displaced does not depend on where the pad is.)
    request.pad_address = addr;
    auto probe = arch_.emit_jump_pad(request);
    std::optional<std::string> refused =
        probe ? displacement_refused(addr, out.code, probe->relocated)
              : std::optional(probe.error().text);
    std::optional<ShortJump> shorter;
    if (refused) {
        shorter = short_jump(addr, out.code);
        if (!shorter)
            return make_error(probe ? ErrorCode::NotAllowed : probe.error().code, *refused);
        request.displaced_minimum = arch_.short_jump_length();
        probe = arch_.emit_jump_pad(request);
        if (!probe) return probe.error();
    }
    out.room = probe->code.size() + 64;
    auto pad = allocate_pad(addr, out.room);
    if (!pad) return pad.error();
    out.pad = *pad;
    request.pad_address = *pad;
    auto emitted = arch_.emit_jump_pad(request);
    if (!emitted) return emitted.error();
    out.emitted = std::move(*emitted);
    if (shorter) {
        auto near = arch_.encode_short_jump(addr, shorter->slot);
        if (!near) return near.error();
        auto far = arch_.encode_pad_jump(shorter->slot, out.pad);
        if (!far) return far.error();
        const auto fill = arch_.breakpoint_instruction();
        out.emitted.patch = std::move(*near);
        while (out.emitted.patch.size() < out.emitted.relocated.covered)
            out.emitted.patch.push_back(fill.empty() ? 0 : fill[0]);
        out.slot = shorter->slot;
        out.slot_patch = std::move(*far);
    }

    // A breakpoint at addr stays in front of the jump (its saved byte becomes the jump's);
    // one further in would sit on bytes no thread runs any more, and a trap tracepoint there
    // would resume into the middle of the jump.
    const std::size_t covered = out.emitted.relocated.covered;
    for (std::size_t i = 0; i < covered; ++i)
        if (process_.trap_site_at(addr + i))
            return make_error(ErrorCode::NotAllowed,
                              fmt::format("a trap tracepoint is installed at 0x{:x}", addr + i));
    // Two jumps never share a byte.
    for (const auto& [other, site] : sites_)
        if (other != addr && overlaps(addr, covered, other, site.code.covered))
            return make_error(
                ErrorCode::NotAllowed,
                fmt::format("the fast tracepoint at 0x{:x} has its jump there", other));
    for (std::size_t i = 1; i < covered; ++i)
        if (memory_.breakpoints().inserted_at(addr + i))
            return make_error(
                ErrorCode::NotAllowed,
                fmt::format("a breakpoint at 0x{:x} is inside the {} bytes of "
                            "instructions a fast tracepoint at 0x{:x} moves to its pad",
                            addr + i, covered, addr));
    return out;
}

Result<std::vector<std::uint8_t>> LinuxFastSites::code_at(std::uint64_t addr) {
    // Whole instructions covering the jump: it ends within one instruction's length of them.
    std::vector<std::uint8_t> code(arch_.min_fast_tracepoint_length() +
                                   arch_.max_instruction_bytes());
    auto got = process_.read_program(addr, code); // breakpoints hidden: the program's own code
    if (!got) return got.error();
    code.resize(*got);
    return code;
}

std::optional<std::string> LinuxFastSites::displacement_refused(std::uint64_t addr,
                                                                std::span<const std::uint8_t> code,
                                                                const arch::Relocated& relocated) {
    if (relocated.boundaries.size() <= 2) return std::nullopt; // only its own instruction
    // (A window may end in padding after a return, where another jump's slot may be.)
    const std::size_t length = arch_.min_fast_tracepoint_length();
    auto jump_inside = [&](std::uint64_t site, std::uint64_t at) {
        return fmt::format("the jump of the fast tracepoint at 0x{:x} is at 0x{:x}, inside the "
                           "{} bytes this one displaces",
                           site, at, relocated.covered);
    };
    for (const auto& [at, slot] : slots_)
        if (overlaps(addr, relocated.covered, at, slot.patch.size()))
            return jump_inside(slot.site, at);
    for (const auto& [site, at] : promised_)
        if (site != addr && overlaps(addr, relocated.covered, at, length))
            return jump_inside(site, at);
    if (auto hazard = arch_.displacement_hazard(code, addr, relocated)) return hazard;
    if (auto entry = entries_.entry_inside(process_.pid(), addr, addr + relocated.covered))
        return entry;
    if (entries_.go_code(process_.pid(), addr)) {
        if (auto call = arch_.displaced_call(code, addr, relocated)) return call;
        if (auto word = goroutine_word_inside(addr, addr + relocated.covered)) return word;
    }
    return stack_word_inside(addr, addr + relocated.covered);
}

Result<std::size_t> LinuxFastSites::jump_span(std::uint64_t addr) {
    // Asked for a tracepoint: gdb's breakpoints carried by jumps there give way to it.
    uncarry_within(addr, arch_.min_fast_tracepoint_length() + arch_.max_instruction_bytes());
    if (auto s = process_.check_interruptible(addr); !s) return s.error();
    if (auto refused = agent_stacks_refused(addr))
        return make_error(ErrorCode::Unsupported, *refused);
    auto code = code_at(addr);
    if (!code) return code.error();
    // Relocated as if its pad were at addr: what is displaced does not depend on where.
    auto relocated = arch_.relocate(*code, addr, addr, arch_.min_fast_tracepoint_length());
    const std::optional<std::string> refused = relocated
                                                   ? displacement_refused(addr, *code, *relocated)
                                                   : std::optional(relocated.error().text);
    if (!refused) {
        promised_windows_[addr] = relocated->covered;
        return relocated->covered;
    }
    if (auto shorter = short_jump(addr, *code)) {
        promised_windows_[addr] = shorter->window.covered;
        return shorter->window.covered;
    }
    return make_error(relocated ? ErrorCode::NotAllowed : relocated.error().code, *refused);
}

std::optional<LinuxFastSites::ShortJump>
LinuxFastSites::short_jump(std::uint64_t addr, std::span<const std::uint8_t> code) {
    const std::size_t length = arch_.short_jump_length();
    // Not in Go: its runtime counts the padding in the function before it, and would preempt
    // a goroutine at the slot and later unwind it with that function's frame.
    if (length == 0 || entries_.go_code(process_.pid(), addr)) return std::nullopt;
    auto window = arch_.relocate(code, addr, addr, length);
    if (!window || window->covered >= arch_.min_fast_tracepoint_length() ||
        displacement_refused(addr, code, *window))
        return std::nullopt;
    auto slot = free_slot(addr, window->covered);
    if (!slot) return std::nullopt;
    promised_[addr] = *slot;
    return ShortJump{std::move(*window), *slot};
}

// A run of bytes that never run within the short jump's reach, used by nothing else of
// tpagent's, with no breakpoint and nothing reaching into it.
std::optional<std::uint64_t> LinuxFastSites::free_slot(std::uint64_t addr, std::size_t covered) {
    const std::size_t length = arch_.min_fast_tracepoint_length();
    const auto reach = static_cast<std::uint64_t>(arch_.short_jump_reach());
    const std::uint64_t from = addr + arch_.short_jump_length(); // where the short jump ends
    if (from < reach + 1) return std::nullopt;
    const std::uint64_t lo = from - reach - 1, hi = from + reach + length;
    std::vector<std::uint8_t> bytes(hi - lo);
    auto got = process_.read_program(lo, bytes); // tpagent's patches hidden
    if (!got || *got != bytes.size()) return std::nullopt;
    auto taken = [&](std::uint64_t s) {
        if (overlaps(s, length, addr, covered)) return true;
        for (const auto& [at, slot] : slots_)
            if (overlaps(s, length, at, slot.patch.size())) return true;
        for (const auto& [site, slot] : promised_)
            if (site != addr && overlaps(s, length, slot, length)) return true;
        for (const auto& [at, site] : sites_)
            if (overlaps(s, length, at, site.code.covered)) return true;
        for (const auto& [at, window] : promised_windows_)
            if (at != addr && overlaps(s, length, at, window)) return true;
        for (std::uint64_t a = s; a < s + length; ++a)
            if (memory_.breakpoints().inserted_at(a) || process_.trap_site_at(a)) return true;
        return false;
    };
    // The slot promised before, unless something took it since.
    if (auto p = promised_.find(addr); p != promised_.end()) {
        if (p->second >= lo && p->second + length <= hi && !taken(p->second)) return p->second;
        promised_.erase(p);
    }
    for (std::uint64_t s = lo; s + length <= hi; ++s) {
        if (!arch_.never_runs(std::span(bytes).subspan(s - lo, length)) || taken(s)) continue;
        if (entries_.entry_inside(process_.pid(), s - 1, s + length)) continue;
        return s;
    }
    return std::nullopt;
}

Status LinuxFastSites::commit_fast_site(std::uint64_t addr, const FastPad& built,
                                        arch::Relocated code) {
    const std::vector<std::uint8_t>& patch = built.emitted.patch;
    FastSite site{
        built.pad,
        built.emitted.relocated_offset,
        std::move(code),
        std::vector<std::uint8_t>(built.code.begin(),
                                  built.code.begin() + static_cast<std::ptrdiff_t>(patch.size())),
        patch,
        built.call,
        built.slot,
        built.emitted.copy};
    // The slot's jump first: nothing runs there, so it may go in before the short jump to it.
    if (built.slot) {
        Slot slot{addr, std::vector<std::uint8_t>(built.slot_patch.size()), built.slot_patch};
        auto got = process_.read_program(built.slot, slot.original);
        if (!got || *got != slot.original.size() || !arch_.never_runs(slot.original))
            return make_error(
                ErrorCode::SystemError,
                fmt::format("the slot at 0x{:x} for the jump to the pad changed", built.slot));
        slots_[built.slot] = slot;
        process_.code_patched();
        if (auto w = write_under_breakpoints(built.slot, built.slot_patch); !w) {
            slots_.erase(built.slot);
            process_.code_patched();
            return w;
        }
    }
    auto drop_slot = [&] {
        if (!built.slot) return;
        (void)write_under_breakpoints(built.slot, slots_[built.slot].original);
        slots_.erase(built.slot);
        process_.code_patched();
    };
    const std::uint64_t relocated = site.pad + site.relocated_offset;
    auto into_pad = [&](std::uint64_t pc) {
        auto off = arch::pad_offset_of(site.code, pc - addr);
        return off ? std::optional(relocated + *off) : std::nullopt;
    };
    if (auto m = move_threads(addr + 1, site.code.covered - 1, into_pad); !m) {
        drop_slot();
        return m;
    }
    sites_[addr] = site;
    process_.code_patched(); // known before it is in memory
    if (auto w = write_under_breakpoints(addr, patch); !w) {
        // Nothing patched: threads moved into the pad go back to the same instructions.
        sites_.erase(addr);
        process_.code_patched();
        move_out_of_copy(addr, site);
        drop_slot();
        return w;
    }
    spdlog::debug("{} at 0x{:x}: pad 0x{:x}, {} bytes replaced",
                  site.call.carries_breakpoint ? "breakpoint" : "fast tracepoint", addr, site.pad,
                  patch.size());
    return ok_status();
}

Status LinuxFastSites::add(std::uint64_t addr, std::uint64_t collector, std::uint64_t argument,
                           arch::FastPadOptions options) {
    uncarry_within(addr, arch_.min_fast_tracepoint_length() + arch_.max_instruction_bytes());
    if (sites_.count(addr)) return ok_status();
    return place_site(addr, {collector, argument, options});
}

Status LinuxFastSites::place_site(std::uint64_t addr, const FastCall& call) {
    auto built = build_fast_pad(addr, call);
    if (!built) return built.error();
    if (auto w = memory_.write_raw(built->pad, built->emitted.code); !w) return w;
    arch::Relocated code = built->emitted.relocated;
    if (auto s = commit_fast_site(addr, *built, code); !s) return s;
    if (call.carries_breakpoint)
        carrier_pads_[addr] = CarrierPad{std::move(*built), std::move(code)};
    return ok_status();
}

// gdb relocates each displaced instruction (tpagent's relocator still says where they start);
// tpagent checks what gdb wrote with its decoder, since gdb's relocator leaves some
// instructions as they were (short branches, for one), which would go astray from the pad.
Result<LinuxFastSites::InstructionMove> LinuxFastSites::begin(std::uint64_t addr,
                                                              std::uint64_t collector,
                                                              std::uint64_t argument,
                                                              arch::FastPadOptions options) {
    moving_.reset();
    uncarry_within(addr, arch_.min_fast_tracepoint_length() + arch_.max_instruction_bytes());
    if (sites_.count(addr))
        return make_error(ErrorCode::NotAllowed, "a fast tracepoint is installed there");
    auto built = build_fast_pad(addr, {collector, argument, options});
    if (!built) return built.error();
    const arch::EmittedJumpPad& emitted = built->emitted;
    const auto own = std::span(emitted.code).first(emitted.relocated_offset);
    if (auto w = memory_.write_raw(built->pad, own); !w) return w.error();
    MovingSite m{addr, std::move(*built), {}, 0};
    m.next_to = m.pad.pad + m.pad.emitted.relocated_offset;
    moving_ = std::move(m);
    return InstructionMove{addr, moving_->next_to};
}

Result<std::optional<LinuxFastSites::InstructionMove>> LinuxFastSites::moved(std::uint64_t length) {
    if (!moving_) return make_error(ErrorCode::NotAllowed, "no instruction is being relocated");
    MovingSite& m = *moving_;
    const std::uint64_t addr = m.addr;
    const arch::Relocated& own = m.pad.emitted.relocated; // instruction starts, then `covered`
    const std::size_t index = m.moved.size();
    const std::uint64_t from = addr + own.boundaries[index].from_offset;
    const std::size_t from_length =
        own.boundaries[index + 1].from_offset - own.boundaries[index].from_offset;
    const std::uint64_t relocated = m.pad.pad + m.pad.emitted.relocated_offset;
    const std::uint64_t end = m.pad.pad + m.pad.room;
    const std::size_t jump_length = arch_.min_fast_tracepoint_length();
    const std::uint64_t to = m.next_to;
    auto fail = [&](std::string text) -> Error {
        moving_.reset();
        return make_error(ErrorCode::Unsupported, std::move(text));
    };
    if (length == 0 || length > end - to || end - to - length < jump_length)
        return fail(fmt::format("gdb relocated the instruction at 0x{:x} to {} bytes; the pad "
                                "has room for {}",
                                from, length, end - to - jump_length));

    // What gdb wrote must reach what the original did (it leaves some instructions as they
    // were, short branches for one, which would go astray from the pad).
    std::vector<std::uint8_t> written(length);
    std::size_t got = 0;
    if (auto r = memory_.read_raw(to, written, got); !r || got != length)
        return fail(
            fmt::format("cannot read back gdb's relocation of the instruction at 0x{:x}", from));
    const auto original = std::span(m.pad.code).subspan(from - addr, from_length);
    auto want = arch_.pc_relative_targets(original, from);
    if (!want) return fail(want.error().text);
    auto have = arch_.pc_relative_targets(written, to);
    const auto wrong = have ? arch::relocation_mismatch(*want, *have, addr, own.covered)
                            : std::optional("does not decode: " + have.error().text);
    if (wrong)
        return fail(fmt::format("gdb's relocation of the instruction at 0x{:x} (to 0x{:x}) {}",
                                from, to, *wrong));

    m.moved.push_back(
        {own.boundaries[index].from_offset, static_cast<std::uint32_t>(to - relocated)});
    m.next_to = to + length;
    if (m.moved.size() + 1 < own.boundaries.size())
        return std::optional(
            InstructionMove{addr + own.boundaries[index + 1].from_offset, m.next_to});

    // All moved: the jump back, then the site as add makes it.
    auto jump = arch_.encode_pad_jump(m.next_to, addr + own.covered);
    if (!jump) return fail(jump.error().text);
    if (auto w = memory_.write_raw(m.next_to, *jump); !w)
        return fail("the jump back: " + w.error().text);
    m.moved.push_back({static_cast<std::uint32_t>(own.covered),
                       static_cast<std::uint32_t>(m.next_to - relocated)});
    arch::Relocated layout;
    layout.covered = own.covered;
    layout.boundaries = std::move(m.moved);
    layout.code.resize(m.next_to + jump->size() - relocated);
    if (auto r = memory_.read_raw(relocated, layout.code, got); !r || got != layout.code.size())
        return fail(
            fmt::format("cannot read back the instructions gdb relocated to 0x{:x}", relocated));
    const FastPad built = std::move(m.pad);
    moving_.reset();
    if (auto s = commit_fast_site(addr, built, std::move(layout)); !s) return s.error();
    return std::optional<InstructionMove>();
}

void LinuxFastSites::remove(std::uint64_t addr) {
    auto it = sites_.find(addr);
    if (it == sites_.end()) return;
    const FastSite& site = it->second;
    if (process_.alive()) {
        // Removal cannot be refused (the trace is over, or the code changed): on a failure
        // the program keeps the jump, whose pad stays mapped and correct (never reused), and
        // threads stay.
        if (auto w = write_under_breakpoints(addr, site.original); !w) {
            spdlog::warn("fast tracepoint at 0x{:x}: cannot restore the code: {}", addr,
                         w.error().text);
            pad_pages_.pin(site.pad);
            slots_.erase(site.slot); // (its jump stays too, as the pad)
            sites_.erase(it);
            process_.code_patched();
            return;
        }
        // Threads in the relocated copy go back to the original instruction; threads in the
        // pad's own code finish it and jump back, into the restored code.
        move_out_of_copy(addr, site);
        // Nothing reaches the slot any more; a thread stopped on it had run nothing yet.
        if (auto slot = slots_.find(site.slot); slot != slots_.end()) {
            if (auto m = move_threads(slot->first, 1,
                                      [&](std::uint64_t) { return std::optional(addr); });
                !m)
                spdlog::warn("fast tracepoint at 0x{:x}: {}", addr, m.error().text);
            if (auto w = write_under_breakpoints(slot->first, slot->second.original); !w)
                spdlog::warn("fast tracepoint at 0x{:x}: cannot restore its slot at 0x{:x}: {}",
                             addr, slot->first, w.error().text);
        }
    }
    slots_.erase(site.slot);
    sites_.erase(it);
    process_.code_patched();
}

// The run is over: its pads and placed code are dead (reused by a later run once no thread
// can be in them, allocate_pad).
void LinuxFastSites::remove_all() {
    remove_sites(false);
    placed_code_live_ = false;
}

Status LinuxFastSites::add_carrier(std::uint64_t addr, std::uint64_t entry, std::uint64_t record,
                                   arch::FastPadOptions options) {
    if (sites_.count(addr))
        return make_error(ErrorCode::NotAllowed,
                          fmt::format("a fast tracepoint's jump is at 0x{:x}", addr));
    const FastCall call{entry, record, options, true};
    if (auto kept = carrier_pads_.find(addr); kept != carrier_pads_.end()) {
        // The same pad again, if it calls the same way and the code under it is the same.
        const FastPad& was = kept->second.built;
        auto now = code_at(addr);
        const bool same = now && was.call.collector == entry && was.call.argument == record &&
                          was.call.options == options && now->size() >= was.code.size() &&
                          std::equal(was.code.begin(), was.code.end(), now->begin());
        if (same)
            if (auto s = commit_fast_site(addr, was, kept->second.code); s) return s;
        carrier_pads_.erase(kept); // (a slot it had may be another's now)
    }
    return place_site(addr, call);
}

void LinuxFastSites::remove_sites(bool carriers) {
    std::vector<std::uint64_t> chosen;
    for (const auto& [addr, site] : sites_)
        if (site.call.carries_breakpoint == carriers) chosen.push_back(addr);
    for (std::uint64_t addr : chosen)
        remove(addr);
}

void LinuxFastSites::uncarry_within(std::uint64_t addr, std::size_t len) {
    std::vector<std::uint64_t> carriers;
    for (const auto& [at, site] : sites_)
        if (site.call.carries_breakpoint && overlaps(addr, len, at, site.code.covered))
            carriers.push_back(at);
    for (std::uint64_t at : carriers) {
        remove(at);
        if (auto s = memory_.uncarry_user_breakpoint(at); !s)
            spdlog::warn("breakpoint at 0x{:x}: cannot put it back as an instruction: {}", at,
                         s.error().text);
        else
            spdlog::debug("breakpoint at 0x{:x}: its condition is evaluated by tpagent again", at);
    }
}

namespace {
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
// How much of a thread's stack is searched for return addresses into retired pads. A thread
// with more (or a stack pointer outside any mapping) keeps every retired page: nothing is
// reused while it is there.
constexpr std::uint64_t kMaxStackScan = 8 << 20;
constexpr std::size_t kScanChunk = 64 << 10;
constexpr std::uint64_t kGoThreadStackScan = 64 << 10;

std::uint64_t word_at(const std::uint8_t* p) {
    std::uint64_t w = 0;
    std::memcpy(&w, p, sizeof w);
    return w;
}
} // namespace

ReadMemory LinuxFastSites::program_memory() {
    return [this](std::uint64_t at, std::span<std::uint8_t> out) {
        return process_.read_program(at, out);
    };
}

bool LinuxFastSites::read_live_stack(
    const std::vector<MappedRange>& maps, std::uint64_t sp,
    const std::function<void(const std::uint8_t*, std::size_t)>& see, std::uint64_t most) {
    sp &= ~std::uint64_t{7};
    auto stack = std::find_if(maps.begin(), maps.end(),
                              [&](const MappedRange& m) { return m.start <= sp && sp < m.end; });
    if (stack == maps.end()) return false;
    std::uint64_t end = stack->end;
    if (most)
        end = std::min(end, sp + most);
    else if (end - sp > kMaxStackScan)
        return false;
    return !scan_memory(sp, end, see);
}

std::optional<std::uint64_t>
LinuxFastSites::scan_memory(std::uint64_t from, std::uint64_t end,
                            const std::function<void(const std::uint8_t*, std::size_t)>& see) {
    // (A goroutine's stack is a few KiB: no 64 KiB buffer for each of thousands.)
    std::vector<std::uint8_t> chunk(std::min<std::uint64_t>(kScanChunk, end - from));
    for (std::uint64_t at = from; at < end; at += kScanChunk) {
        const std::size_t n = std::min<std::uint64_t>(kScanChunk, end - at);
        std::size_t got = 0;
        if (auto r = memory_.read_raw(at, std::span(chunk).first(n), got); !r || got != n)
            return at;
        see(chunk.data(), n);
    }
    return std::nullopt;
}

// A thread inside a callee called from the displaced instructions returns to one of them,
// and one interrupted there by a signal whose handler still runs resumes there: both leave
// the address on the thread's stack. A stale word only costs the jump (a trap collects).
std::optional<std::string> LinuxFastSites::stack_word_inside(std::uint64_t lo, std::uint64_t hi) {
    const auto maps = read_maps(process_.pid());
    // A Go thread's own stacks (g0's, gsignal's: a few KiB) sit in the Go heap's large
    // mappings; the goroutines' stacks are goroutine_word_inside's.
    const std::uint64_t most = entries_.go_code(process_.pid(), lo) ? kGoThreadStackScan : 0;
    for (auto& [tid, t] : threads_) {
        if (!t.kernel.stopped()) continue;
        auto s = process_.registers(tid);
        if (!s) return fmt::format("thread {}: cannot read its registers: {}", tid, s.error().text);
        std::optional<std::uint64_t> found;
        auto see = [&](const std::uint8_t* words, std::size_t bytes) {
            for (std::size_t i = 0; i + 8 <= bytes && !found; i += 8)
                if (const std::uint64_t w = word_at(words + i); w > lo && w < hi) found = w;
        };
        if (!read_live_stack(maps, arch_.sp(**s), see, most))
            return fmt::format("thread {}: its stack cannot be searched for addresses inside "
                               "the jump",
                               tid);
        if (found)
            return fmt::format("thread {} will return or resume at 0x{:x}, inside the {} bytes "
                               "the jump displaces (an address on its stack)",
                               tid, *found, hi - lo);
    }
    return std::nullopt;
}

std::optional<std::string> LinuxFastSites::goroutine_word_inside(std::uint64_t lo,
                                                                 std::uint64_t hi) {
    if (!goroutine_code_words_) {
        auto span = entries_.file_span(process_.pid(), lo);
        if (!span) return fmt::format("the code at 0x{:x} is in no ELF file", lo);
        auto stacks = goroutine_stacks(process_.pid(), program_memory());
        if (!stacks) return stacks.error().text;
        std::vector<std::uint64_t> words;
        auto see = [&](const std::uint8_t* chunk, std::size_t bytes) {
            for (std::size_t i = 0; i + 8 <= bytes; i += 8)
                if (const std::uint64_t w = word_at(chunk + i);
                    w >= span->first && w < span->second)
                    words.push_back(w);
        };
        for (const GoroutineStack& g : *stacks)
            if (auto unread = scan_memory(g.lo, g.hi, see))
                return fmt::format("a goroutine's stack at 0x{:x} cannot be read", *unread);
        std::sort(words.begin(), words.end());
        words.erase(std::unique(words.begin(), words.end()), words.end());
        spdlog::debug("goroutines: {} stacks, {} words into the code", stacks->size(),
                      words.size());
        goroutine_code_words_ = std::move(words);
    }
    auto it = std::upper_bound(goroutine_code_words_->begin(), goroutine_code_words_->end(), lo);
    if (it != goroutine_code_words_->end() && *it < hi)
        return fmt::format("a goroutine will resume at 0x{:x}, inside the {} bytes the jump "
                           "displaces (an address on its stack)",
                           *it, hi - lo);
    return std::nullopt;
}

bool LinuxFastSites::pads_in_use() const {
    return placed_code_live_ || moving_ || !sites_.empty() || process_.trap_pads_in_use();
}

// A retired run's code is safe to overwrite when no thread can reach it again: every thread
// is stopped (gdb is all-stop, and leave_pads stepped them out of pads and the collector),
// none is still in the collector (which may go on to placed code of any run), and no general
// register or word of its live stack ([sp, end of that mapping)) points into one of the run's
// pages. That covers a thread in a pad, the return address of a collector call, and the
// return address of a call the pad's relocated instructions made natively (the callee may be
// blocked anywhere in the program). A stale stack word only keeps its run's pages a while.
// Not seen: a signal handler running on an alternate stack (sigaltstack) that interrupted a
// pad, the collector or such a callee, whose return path is on the thread's other stack.
bool LinuxFastSites::reclaim_pads() {
    if (!process_.at_rest()) return false;
    const auto maps = read_maps(process_.pid());
    std::set<std::uint64_t> kept;
    auto see = [&](const std::uint8_t* words, std::size_t bytes) {
        for (std::size_t i = 0; i + 8 <= bytes; i += 8)
            if (auto run = pad_pages_.retired_run_at(word_at(words + i))) kept.insert(*run);
    };
    for (auto& [tid, t] : threads_) {
        if (!t.kernel.stopped() || t.awaiting_first_stop()) return false;
        auto s = process_.registers(tid);
        if (!s) return false;
        const std::uint64_t pc = arch_.pc(**s);
        if (in_agent_code(pc)) return false;
        see((*s)->gpr.data(), (*s)->gpr.size()); // the pc too, and a link register
        if (!read_live_stack(maps, arch_.sp(**s), see)) return false;
    }
    const std::size_t freed = pad_pages_.free_retired_except(kept);
    spdlog::debug("pads: {} page(s) of earlier runs free for reuse, {} run(s) kept", freed,
                  kept.size());
    return freed > 0;
}

Result<std::uint64_t> LinuxFastSites::allocate_pad(std::uint64_t near, std::size_t size) {
    size = (size + 15) & ~std::size_t{15};
    const std::uint64_t reach = arch_.pad_reach() - PadPages::kPageSize;
    // Nothing installed uses this run's code any more (a new run is placing its own): it is
    // dead, and its pages retire.
    if (!pads_in_use()) {
        pad_pages_.retire_current();
        carrier_pads_.clear(); // (their pages with the rest)
    }
    if (auto at = pad_pages_.take(near, size, reach)) return *at;
    if (pad_pages_.any_retired() && reclaim_pads())
        if (auto at = pad_pages_.take(near, size, reach)) return *at;

    const std::size_t length = (size + PadPages::kPageSize - 1) & ~(PadPages::kPageSize - 1);
    auto where =
        find_free_range(read_maps(process_.pid()), near, length, reach, arch_.user_address_top());
    if (!where)
        return make_error(ErrorCode::Unsupported,
                          fmt::format("no free memory within reach of 0x{:x}", near));
    const pid_t tid = remote_calls_.thread();
    if (tid == 0)
        return make_error(ErrorCode::NotAllowed,
                          "no thread to map a pad page with (none but at a system call's entry)");
    const std::uint64_t args[] = {*where,
                                  length,
                                  PROT_READ | PROT_EXEC,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                                  static_cast<std::uint64_t>(-1),
                                  0};
    auto mapped = remote_calls_.system_call(tid, SYS_mmap, args, "mmap in the program failed");
    if (!mapped) return mapped.error();
    const std::uint64_t base = *mapped;
    if (base != *where)
        return make_error(ErrorCode::SystemError, "mmap in the program ignored the address");
    pad_pages_.add(base, length, size);
    spdlog::debug("pad page at 0x{:x} for code at 0x{:x} ({} bytes of pads mapped)", base, near,
                  pad_pages_.mapped_bytes());
    return base;
}

// Placed code is only ever called by the collector, from the records of the run that placed
// it: it lives until that run's fast tracepoints are all removed (remove_all).
Result<std::uint64_t> LinuxFastSites::place_code(std::uint64_t near,
                                                 std::span<const std::uint8_t> code) {
    auto at = allocate_pad(near, code.size());
    if (!at) return at.error();
    placed_code_live_ = true;
    if (auto w = memory_.write_raw(*at, code); !w) return w.error();
    return *at;
}

} // namespace tpagent::process
