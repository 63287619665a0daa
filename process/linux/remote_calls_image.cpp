// RemoteCalls::place_agent_image: the in-process agent's self-mapped image placed in the program
// by tpagent itself, as a dynamic loader would (the program's own loader is not called: a static
// program has none, musl's cannot take a glibc-built library, and another stopped thread may
// hold glibc's loader or malloc lock). In one stopped thread: the file is opened and its
// segments mapped from it (so /proc/PID/maps names the image), the bytes past a segment's file
// part zeroed, the RELATIVE relocations written through /proc/PID/mem, and the image's start
// called, which creates the shared buffer with its own system calls. No lock of the program's
// is taken on the way.
#include "process/linux/agent_image.hpp"
#include "process/linux/remote_calls.hpp"
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/syscall.h>

namespace tpagent::process {

namespace {

constexpr std::uint64_t kImagePage = AgentImage::kPage;

std::uint64_t page_down(std::uint64_t v) {
    return v & ~(kImagePage - 1);
}
std::uint64_t page_up(std::uint64_t v) {
    return (v + kImagePage - 1) & ~(kImagePage - 1);
}

} // namespace

// How the image reads the thread pointer (inproc::ThreadPointerSource): 2, a load at it, where
// the word there is the pointer itself in every thread (x86-64's TCB, glibc's and musl's: one
// load a hit); else 1, by instruction, where the architecture may (rdfsbase: ~6 ns); else 0, by
// system call.
long RemoteCalls::thread_pointer_source() {
    const auto tail = arch_.fast_block_tail();
    const long fallback = tail.by_instruction ? 1 : 0;
    if (tail.regnums.empty()) return fallback;
    const auto regs = arch_.registers();
    const auto regnum = static_cast<std::size_t>(tail.regnums.front());
    if (regnum >= regs.size() || regs[regnum].size != 8) return fallback;
    std::vector<std::uint8_t> g(arch_.g_size());
    std::vector<bool> available;
    for (const auto& [tid, t] : threads_) {
        auto snapshot = registers_.snapshot(tid, false);
        if (!snapshot) return fallback;
        arch_.snapshot_to_g(**snapshot, g, available);
        std::uint64_t tp = 0, at_tp = 0;
        std::memcpy(&tp, g.data() + regs[regnum].g_offset, 8);
        std::vector<std::uint8_t> word(8);
        std::size_t got = 0;
        if (tp == 0 || !memory_.read_raw(tp, word, got) || got != 8) return fallback;
        std::memcpy(&at_tp, word.data(), 8);
        if (at_tp != tp) return fallback;
    }
    return 2;
}

Status RemoteCalls::place_agent_image(const std::string& path) {
    auto image = read_agent_image(path);
    if (!image) return image.error();
    const pid_t tid = thread();
    if (tid == 0)
        return make_error(ErrorCode::NotAllowed,
                          "no thread to run it (none but at a system call's entry)");
    if (path.size() + 1 > kImagePage - 16)
        return make_error(ErrorCode::TooLarge, "the image's path is too long");

    // A page of its own: the breakpoint the start call returns onto, then the path.
    const std::uint64_t scratch_args[] = {0,
                                          kImagePage,
                                          PROT_READ | PROT_EXEC,
                                          MAP_PRIVATE | MAP_ANONYMOUS,
                                          static_cast<std::uint64_t>(-1),
                                          0};
    auto scratch = system_call(tid, SYS_mmap, scratch_args, "cannot map a page in the program");
    if (!scratch) return scratch.error();
    std::vector<std::uint8_t> bytes(16, 0);
    const auto brk = arch_.breakpoint_instruction();
    std::copy(brk.begin(), brk.end(), bytes.begin());
    bytes.insert(bytes.end(), path.begin(), path.end());
    bytes.push_back(0);

    std::uint64_t base = 0;
    auto place = [&]() -> Status {
        if (auto w = memory_.write_raw(*scratch, bytes); !w) return w;
        const std::uint64_t open_args[] = {
            static_cast<std::uint64_t>(AT_FDCWD), *scratch + 16, O_RDONLY | O_CLOEXEC, 0, 0, 0};
        auto fd = system_call(tid, SYS_openat, open_args,
                              fmt::format("the program cannot open {}", path));
        if (!fd) return fd.error();
        // The whole span reserved, then each segment mapped over it from the file.
        const std::uint64_t reserve_args[] = {
            0, image->span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, static_cast<std::uint64_t>(-1),
            0};
        Status status = ok_status();
        if (auto r = system_call(tid, SYS_mmap, reserve_args, "cannot map the image"); r)
            base = *r;
        else
            status = r.error();
        for (const AgentImage::Segment& s : image->segments) {
            if (!status) break;
            const std::uint64_t start = page_down(s.vaddr);
            const std::uint64_t file_end = s.vaddr + s.file_bytes;
            if (s.file_bytes) {
                const std::uint64_t args[] = {base + start,
                                              file_end - start,
                                              static_cast<std::uint64_t>(s.prot),
                                              MAP_PRIVATE | MAP_FIXED,
                                              *fd,
                                              page_down(s.offset)};
                if (auto r = system_call(tid, SYS_mmap, args, "cannot map the image's segment"); !r)
                    status = r.error();
            }
            // Past the file's part: the rest of its last page is the file's next bytes, to be
            // zeroed; whole pages beyond are the reservation's, zero already.
            if (status && s.memory_bytes > s.file_bytes && file_end % kImagePage && s.file_bytes)
                status = memory_.write_raw(
                    base + file_end, std::vector<std::uint8_t>(page_up(file_end) - file_end, 0));
            const std::uint64_t anonymous = s.file_bytes ? page_up(file_end) : start;
            const std::uint64_t end = page_up(s.vaddr + s.memory_bytes);
            if (status && end > anonymous) {
                const std::uint64_t args[] = {
                    base + anonymous, end - anonymous, static_cast<std::uint64_t>(s.prot), 0, 0, 0};
                if (auto r = system_call(tid, SYS_mprotect, args, "cannot protect the image"); !r)
                    status = r.error();
            }
        }
        const std::uint64_t close_args[] = {*fd, 0, 0, 0, 0, 0};
        (void)system_call(tid, SYS_close, close_args, "close");
        if (!status) return status;
        for (const auto& [at, words] : relocated_words(*image, base))
            if (auto w = memory_.write_raw(at, words); !w) return w;
        const long source = thread_pointer_source();
        const std::uint64_t start_args[] = {static_cast<std::uint64_t>(source)};
        auto started = function_call(tid, base + image->start, start_args, *scratch);
        if (!started) return started.error();
        if (*started != 0)
            return make_error(ErrorCode::SystemError,
                              "the image's start could not create the shared buffer");
        static constexpr const char* kSources[] = {"system call", "instruction", "load at it"};
        spdlog::info("agent image placed at 0x{:x} (by thread {}); thread pointer by {}", base, tid,
                     kSources[source]);
        return ok_status();
    };
    Status status = place();
    if (!status && base) {
        const std::uint64_t unmap_args[] = {base, image->span, 0, 0, 0, 0};
        (void)system_call(tid, SYS_munmap, unmap_args, "munmap");
    }
    const std::uint64_t unmap_args[] = {*scratch, kImagePage, 0, 0, 0, 0};
    if (!system_call(tid, SYS_munmap, unmap_args, "munmap"))
        spdlog::warn("thread {}: the page of an injected call stays mapped at 0x{:x}", tid,
                     *scratch);
    return status;
}

} // namespace tpagent::process
