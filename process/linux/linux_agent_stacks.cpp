// Agent stacks for the pads of a Go program (arch::AgentStacks, go_program.hpp): one pool,
// mapped by an injected mmap at the first pad and never unmapped, since each thread keeps the
// stack it took (its address is in the thread's own memory, where tpagent does not follow it).
#include "process/linux/linux_fast_sites.hpp"
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/syscall.h>

namespace tpagent::process {

bool LinuxFastSites::pads_on_agent_stacks() {
    if (!go_program_) go_program_ = go_program_of(process_.pid());
    return *go_program_ != GoProgram::NotGo;
}

std::optional<std::string> LinuxFastSites::agent_stacks_refused(std::uint64_t addr) {
    if (!pads_on_agent_stacks()) return std::nullopt;
    if (*go_program_ == GoProgram::WithCgo)
        return "a Go program linked with cgo: goroutine stacks cannot take a pad, and the "
               "thread has no free word to find an agent stack with";
    if (!arch_.pads_on_agent_stacks())
        return "a Go program: goroutine stacks cannot take a pad, and pads on agent stacks "
               "are not built for this architecture yet";
    if (arch_.agent_stacks_in_goroutine_m() && !go_thread_words_) {
        auto words = go_thread_words(process_.pid(), program_memory());
        if (!words)
            return "a Go program: goroutine stacks cannot take a pad, and the pads find no "
                   "agent stack: " +
                   words.error().text;
        go_thread_words_ = std::move(*words);
    }
    if (go_thread_words_)
        for (const CodeRange& r : go_thread_words_->g_unset)
            if (addr >= r.start && addr < r.end)
                return fmt::format("the Go runtime's code at 0x{:x} runs before x28 is the "
                                   "thread's goroutine, where a pad finds its agent stack",
                                   addr);
    return std::nullopt;
}

Result<arch::AgentStacks> LinuxFastSites::agent_stacks(std::uint64_t addr) {
    if (!pads_on_agent_stacks()) return arch::AgentStacks{};
    if (auto refused = agent_stacks_refused(addr))
        return make_error(ErrorCode::Unsupported, *refused);
    if (!agent_stack_pool_) {
        const std::uint64_t bytes =
            arch::kAgentStackHeaderBytes + kAgentStackCount * std::uint64_t{kAgentStackBytes};
        const pid_t tid = remote_calls_.thread();
        if (tid == 0)
            return make_error(ErrorCode::NotAllowed,
                              "no thread to map the agent stacks with (none but at a system "
                              "call's entry)");
        // Untouched pages cost nothing: a stack's pages come in as a thread first uses them.
        const std::uint64_t args[] = {0,
                                      bytes,
                                      PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                                      static_cast<std::uint64_t>(-1),
                                      0};
        auto mapped =
            remote_calls_.system_call(tid, SYS_mmap, args, "mmap of the agent stacks failed");
        if (!mapped) return mapped.error();
        agent_stack_pool_ = AgentStackPool{*mapped, bytes};
        spdlog::debug("agent stacks: {} of {} KiB at 0x{:x}", kAgentStackCount,
                      kAgentStackBytes >> 10, *mapped);
    }
    arch::AgentStacks stacks{agent_stack_pool_->address, agent_stack_pool_->bytes, kAgentStackBytes,
                             kGoThreadSlots};
    if (go_thread_words_) {
        stacks.thread_slots = go_thread_words_->thread_slots;
        stacks.goroutine_m = go_thread_words_->goroutine_m;
    }
    return stacks;
}

std::optional<FastSites::AgentStackUse> LinuxFastSites::agent_stack_use() {
    if (!agent_stack_pool_) return std::nullopt;
    std::uint8_t header[16] = {};
    auto got = process_.read_program(agent_stack_pool_->address, header);
    if (!got || *got != sizeof header) return std::nullopt;
    std::uint64_t handed_out = 0, missed = 0;
    std::memcpy(&handed_out, header, 8);
    std::memcpy(&missed, header + 8, 8);
    // Hits that found the pool used up still added to the bytes handed out.
    return AgentStackUse{std::min(handed_out / kAgentStackBytes, kAgentStackCount),
                         kAgentStackCount, missed};
}

} // namespace tpagent::process
