// The RemoteCalls that make the program do something for tpagent: map shared pages in now
// (map_now), and load a shared library (the in-process agent, for fast tracepoints in a
// process tpagent attached to): the program's own dlopen, called in one stopped thread
// that returns onto a breakpoint in a page mapped for the call; the thread's registers, vector
// state included, are put back afterwards, so a system call it was stopped in restarts as it
// would have.
#include "process/linux/elf_image.hpp"
#include "process/linux/remote_calls.hpp"
#include "process/linux/svr4_libraries.hpp"
#include "base/proc_files.hpp"
#include <cerrno>
#include <csignal>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tpagent::process {

namespace {

constexpr std::size_t kMaxErrorText = 512;
constexpr std::uint64_t kLandingBytes = 4096;

struct LoaderFunctions {
    std::uint64_t dlopen = 0;
    std::uint64_t dlerror = 0;
};

// dlopen and dlerror as the program's libraries export them: the C library's first (glibc
// 2.34 on), then libdl's.
std::optional<LoaderFunctions> loader_functions(pid_t pid) {
    std::vector<std::pair<std::string, std::uint64_t>> files;
    for (const auto& [path, start] : mapped_files(pid)) {
        const std::string_view base = std::string_view(path).substr(path.rfind('/') + 1);
        if (is_c_library(path))
            files.insert(files.begin(), {path, start});
        else if (base.starts_with("libdl.so") || base.starts_with("libdl-"))
            files.emplace_back(path, start);
    }
    for (const auto& [path, start] : files) {
        const auto symbols = mapped_file_symbols(pid, path, start, {"dlopen", "dlerror"}, true);
        const auto open = symbols.find("dlopen");
        if (open == symbols.end()) continue;
        const auto error = symbols.find("dlerror");
        return LoaderFunctions{open->second, error == symbols.end() ? 0 : error->second};
    }
    return std::nullopt;
}

} // namespace

Status RemoteCalls::load_library(const std::string& path) {
    const pid_t tid = thread();
    if (tid == 0)
        return make_error(ErrorCode::NotAllowed,
                          "no thread to run it (none but at a system call's entry)");
    // AT_BASE, where the dynamic loader is: 0 in a statically linked program.
    if (auxv_value(read_file(fmt::format("/proc/{}/auxv", pid_)), AT_BASE) == 0)
        return make_error(ErrorCode::Unsupported,
                          "the program is statically linked: it has no dynamic loader");
    const auto loader = loader_functions(pid_);
    if (!loader)
        return make_error(ErrorCode::Unsupported,
                          "the program has no dlopen (neither its C library nor libdl exports "
                          "one)");
    if (path.size() + 1 > kLandingBytes - 16)
        return make_error(ErrorCode::TooLarge, "the library's path is too long");

    // A page of its own: the breakpoint the call returns onto, then the path.
    const std::uint64_t map_args[] = {0,
                                      kLandingBytes,
                                      PROT_READ | PROT_EXEC,
                                      MAP_PRIVATE | MAP_ANONYMOUS,
                                      static_cast<std::uint64_t>(-1),
                                      0};
    auto page = system_call(tid, SYS_mmap, map_args, "cannot map a page in the program");
    if (!page) return page.error();
    const std::uint64_t landing = *page;
    std::vector<std::uint8_t> bytes(16, 0);
    const auto brk = arch_.breakpoint_instruction();
    std::copy(brk.begin(), brk.end(), bytes.begin());
    bytes.insert(bytes.end(), path.begin(), path.end());
    bytes.push_back(0);

    Status status = memory_.write_raw(landing, bytes);
    if (status) {
        const std::uint64_t open_args[] = {landing + 16, RTLD_NOW};
        auto handle = function_call(tid, loader->dlopen, open_args, landing);
        if (!handle) {
            status = make_error(handle.error().code, "dlopen: " + handle.error().text);
        } else if (*handle == 0) {
            std::string why = "dlopen failed";
            if (loader->dlerror)
                if (auto text = function_call(tid, loader->dlerror, {}, landing); text && *text) {
                    std::vector<std::uint8_t> s(kMaxErrorText);
                    std::size_t got = 0;
                    if (memory_.read_raw(*text, s, got)) {
                        const auto* c = reinterpret_cast<const char*>(s.data());
                        why = std::string(c, strnlen(c, got));
                    }
                }
            status = make_error(ErrorCode::SystemError, why);
        } else {
            spdlog::debug("thread {}: dlopen(\"{}\") = 0x{:x}", tid, path, *handle);
        }
    }
    const std::uint64_t unmap_args[] = {landing, kLandingBytes, 0, 0, 0, 0};
    if (!system_call(tid, SYS_munmap, unmap_args, "munmap"))
        spdlog::warn("thread {}: the page of an injected call stays mapped at 0x{:x}", tid,
                     landing);
    return status;
}

// madvise(MADV_POPULATE_WRITE) run by one of the program's threads: the kernel maps the pages
// in one call (Linux 5.14 and later; before, EINVAL, and they fault in as before).
Status RemoteCalls::map_now(std::uint64_t addr, std::uint64_t length) {
    const pid_t tid = thread();
    if (tid == 0)
        return make_error(ErrorCode::NotAllowed,
                          "no thread to run it (none but at a system call's entry)");
    const std::uint64_t args[] = {addr, length, MADV_POPULATE_WRITE, 0, 0, 0};
    auto r = system_call(tid, SYS_madvise, args, "madvise in the program");
    if (!r) return r.error();
    return ok_status();
}

} // namespace tpagent::process
