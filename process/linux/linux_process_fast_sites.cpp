// Fast-tracepoint sites: a jump from the program's code to a pad that calls the in-process
// collector, built by the architecture and mapped near the code (PIE and shared libraries).
// Patching happens only while every thread is stopped (all-stop), so no thread can run a
// half-written jump; the one hazard left is a thread stopped inside the bytes the jump
// replaces, which is moved to the same instruction's copy in the pad.
#include "process/linux/linux_process.hpp"
#include "process/linux/guarded_pages.hpp"
#include <cstring>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::process {

Status
LinuxProcess::move_threads(std::uint64_t from, std::size_t len,
                           const std::function<std::optional<std::uint64_t>(std::uint64_t)>& move) {
    struct Move {
        pid_t tid;
        std::uint64_t from, to;
    };
    std::vector<Move> moves;
    for (auto& [tid, t] : threads_) {
        if (!t.stopped) continue;
        auto s = snapshot(tid, false);
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
        arch::RegisterSnapshot& regs = **snapshot(m.tid, false); // cached by the loop above
        arch_.set_pc(regs, m.to);
        if (auto w = arch_.write_general_registers(m.tid, regs); !w) {
            // Put back the ones already moved: either every thread moves or none does.
            arch_.set_pc(regs, m.from);
            for (std::size_t j = 0; j < i; ++j) {
                arch::RegisterSnapshot& done = **snapshot(moves[j].tid, false);
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

void LinuxProcess::move_out_of_copy(std::uint64_t addr, const FastSite& site) {
    const std::uint64_t relocated = site.pad + site.relocated_offset;
    auto out = [&](std::uint64_t pc) {
        return arch::original_address(site.code, relocated, addr, pc);
    };
    if (auto m = move_threads(relocated, site.code.code.size(), out); !m)
        spdlog::warn("fast tracepoint at 0x{:x}: {}", addr, m.error().text);
}

const std::pair<const std::uint64_t, LinuxProcess::FastSite>*
LinuxProcess::fast_site_covering(std::uint64_t addr) const {
    auto it = fast_sites_.upper_bound(addr);
    if (it == fast_sites_.begin()) return nullptr;
    --it;
    return addr - it->first < it->second.code.covered ? &*it : nullptr;
}

Status LinuxProcess::write_under_breakpoints(std::uint64_t addr,
                                             std::span<const std::uint8_t> data) {
    return memory_->write_raw(addr, memory_->breakpoints().shadow_write(addr, data));
}

Result<LinuxProcess::FastPad> LinuxProcess::build_fast_pad(std::uint64_t addr,
                                                           const FastCall& call) {
    if (auto s = check_interruptible(addr); !s) return s.error();
    FastPad out;
    out.call = call;
    // Whole instructions covering the jump: it ends within one instruction's length of them.
    out.code.resize(arch_.min_fast_tracepoint_length() + arch_.max_instruction_bytes());
    auto got = read_memory(addr, out.code); // breakpoints hidden: the program's own code
    if (!got) return got.error();
    out.code.resize(*got);

    arch::JumpPadRequest request;
    request.tracepoint_address = addr;
    request.collector = call.collector;
    request.argument = call.argument;
    request.original_code = out.code;
    request.options = call.options;
    // smaps is read only where it can matter: a landing pad (never on x86-64).
    request.branch_target_guarded =
        arch_.branch_target_landing_pad(out.code) && branch_target_guarded(pid_, addr);
    // Emit once at a provisional address for the size, then for the real pad.
    request.pad_address = addr;
    auto probe = arch_.emit_jump_pad(request);
    if (!probe) return probe.error();
    out.room = probe->code.size() + 64;
    auto pad = allocate_pad(addr, out.room);
    if (!pad) return pad.error();
    out.pad = *pad;
    request.pad_address = *pad;
    auto emitted = arch_.emit_jump_pad(request);
    if (!emitted) return emitted.error();
    out.emitted = std::move(*emitted);

    // A breakpoint at addr stays in front of the jump (its saved byte becomes the jump's);
    // one further in would sit on bytes no thread runs any more, and a trap tracepoint there
    // would resume into the middle of the jump.
    const std::size_t covered = out.emitted.relocated.covered;
    for (std::size_t i = 0; i < covered; ++i)
        if (trap_sites_.has(addr + i))
            return make_error(ErrorCode::NotAllowed,
                              fmt::format("a trap tracepoint is installed at 0x{:x}", addr + i));
    // Two jumps never share a byte.
    for (const auto& [other, site] : fast_sites_)
        if (other != addr && other < addr + covered && addr < other + site.code.covered)
            return make_error(
                ErrorCode::NotAllowed,
                fmt::format("the fast tracepoint at 0x{:x} has its jump there", other));
    for (std::size_t i = 1; i < covered; ++i)
        if (memory_->breakpoints().inserted_at(addr + i))
            return make_error(
                ErrorCode::NotAllowed,
                fmt::format("a breakpoint at 0x{:x} is inside the {} bytes of "
                            "instructions a fast tracepoint at 0x{:x} moves to its pad",
                            addr + i, covered, addr));
    return out;
}

Status LinuxProcess::commit_fast_site(std::uint64_t addr, const FastPad& built,
                                      arch::Relocated code) {
    const std::vector<std::uint8_t>& patch = built.emitted.patch;
    FastSite site{
        built.pad,
        built.emitted.relocated_offset,
        std::move(code),
        std::vector<std::uint8_t>(built.code.begin(),
                                  built.code.begin() + static_cast<std::ptrdiff_t>(patch.size())),
        patch,
        built.call};
    const std::uint64_t relocated = site.pad + site.relocated_offset;
    auto into_pad = [&](std::uint64_t pc) {
        auto off = arch::pad_offset_of(site.code, pc - addr);
        return off ? std::optional(relocated + *off) : std::nullopt;
    };
    if (auto m = move_threads(addr + 1, site.code.covered - 1, into_pad); !m) return m;
    fast_sites_[addr] = site;
    publish_code_patches(); // known before it is in memory
    if (auto w = write_under_breakpoints(addr, patch); !w) {
        // Nothing patched: threads moved into the pad go back to the same instructions.
        fast_sites_.erase(addr);
        publish_code_patches();
        move_out_of_copy(addr, site);
        return w;
    }
    spdlog::debug("fast tracepoint at 0x{:x}: pad 0x{:x}, {} bytes replaced", addr, site.pad,
                  patch.size());
    return ok_status();
}

Status LinuxProcess::add_fast_site(std::uint64_t addr, std::uint64_t collector,
                                   std::uint64_t argument, arch::FastPadOptions options) {
    if (fast_sites_.count(addr)) return ok_status();
    auto built = build_fast_pad(addr, {collector, argument, options});
    if (!built) return built.error();
    if (auto w = memory_->write_raw(built->pad, built->emitted.code); !w) return w;
    arch::Relocated code = std::move(built->emitted.relocated);
    return commit_fast_site(addr, *built, std::move(code));
}

// gdb relocates each displaced instruction (tpagent's relocator still says where they start);
// tpagent checks what gdb wrote with its decoder, since gdb's relocator leaves some
// instructions as they were (short branches, for one), which would go astray from the pad.
Result<LinuxProcess::InstructionMove> LinuxProcess::begin_fast_site(std::uint64_t addr,
                                                                    std::uint64_t collector,
                                                                    std::uint64_t argument,
                                                                    arch::FastPadOptions options) {
    moving_.reset();
    if (fast_sites_.count(addr))
        return make_error(ErrorCode::NotAllowed, "a fast tracepoint is installed there");
    auto built = build_fast_pad(addr, {collector, argument, options});
    if (!built) return built.error();
    const arch::EmittedJumpPad& emitted = built->emitted;
    const auto own = std::span(emitted.code).first(emitted.relocated_offset);
    if (auto w = memory_->write_raw(built->pad, own); !w) return w.error();
    MovingSite m{addr, std::move(*built), {}, 0};
    m.next_to = m.pad.pad + m.pad.emitted.relocated_offset;
    moving_ = std::move(m);
    return InstructionMove{addr, moving_->next_to};
}

Result<std::optional<LinuxProcess::InstructionMove>>
LinuxProcess::fast_site_moved(std::uint64_t length) {
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
    if (auto r = memory_->read_raw(to, written, got); !r || got != length)
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

    // All moved: the jump back, then the site as add_fast_site makes it.
    auto jump = arch_.encode_pad_jump(m.next_to, addr + own.covered);
    if (!jump) return fail(jump.error().text);
    if (auto w = memory_->write_raw(m.next_to, *jump); !w)
        return fail("the jump back: " + w.error().text);
    m.moved.push_back({static_cast<std::uint32_t>(own.covered),
                       static_cast<std::uint32_t>(m.next_to - relocated)});
    arch::Relocated layout;
    layout.covered = own.covered;
    layout.boundaries = std::move(m.moved);
    layout.code.resize(m.next_to + jump->size() - relocated);
    if (auto r = memory_->read_raw(relocated, layout.code, got); !r || got != layout.code.size())
        return fail(
            fmt::format("cannot read back the instructions gdb relocated to 0x{:x}", relocated));
    const FastPad built = std::move(m.pad);
    moving_.reset();
    if (auto s = commit_fast_site(addr, built, std::move(layout)); !s) return s.error();
    return std::optional<InstructionMove>();
}

void LinuxProcess::remove_fast_site(std::uint64_t addr) {
    auto it = fast_sites_.find(addr);
    if (it == fast_sites_.end()) return;
    const FastSite& site = it->second;
    if (alive_) {
        // Removal cannot be refused (the trace is over, or the code changed): on a failure
        // the program keeps the jump, whose pad stays mapped and correct (never reused), and
        // threads stay.
        if (auto w = write_under_breakpoints(addr, site.original); !w) {
            spdlog::warn("fast tracepoint at 0x{:x}: cannot restore the code: {}", addr,
                         w.error().text);
            pad_pages_.pin(site.pad);
            fast_sites_.erase(it);
            publish_code_patches();
            return;
        }
        // Threads in the relocated copy go back to the original instruction; threads in the
        // pad's own code finish it and jump back, into the restored code.
        move_out_of_copy(addr, site);
    }
    fast_sites_.erase(it);
    publish_code_patches();
}

// The run is over: its pads and placed code are dead (reused by a later run once no thread
// can be in them, allocate_pad).
void LinuxProcess::remove_all_fast_sites() {
    while (!fast_sites_.empty())
        remove_fast_site(fast_sites_.begin()->first);
    placed_code_live_ = false;
}

} // namespace tpagent::process
