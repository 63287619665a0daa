#include "process/linux/linux_process.hpp"
#include "base/system_error.hpp"
#include "process/linux/terminal.hpp"
#include "process/linux/code_guard.hpp"
#include "process/linux/child_events.hpp"
#include "process/linux/read_only_image.hpp"
#include "process/linux/sdt_markers.hpp"
#include "process/linux/svr4_libraries.hpp"
#include "base/proc_files.hpp"
#include "base/proc_maps.hpp"
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tpagent::process {

namespace {
// Forks are traced only to clean the child's copy of the code and let it go.
// A program tpagent started dies with it: through the code guard's watchdog when it runs
// (which keeps a traced program alive instead), else by PTRACE_O_EXITKILL.
// TRACESYSGOOD: system-call stops (QCatchSyscalls) tell themselves apart from SIGTRAP.
constexpr long kPtraceOptions = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK |
                                PTRACE_O_TRACEVFORK | PTRACE_O_TRACEVFORKDONE |
                                PTRACE_O_TRACESYSGOOD;
long launch_ptrace_options() {
    return kPtraceOptions | (code_guard::running() ? 0 : PTRACE_O_EXITKILL);
}

// Waits for `tid` to stop; false if it exited instead.
bool wait_for_stop(pid_t tid, WaitStatus& status) {
    while (true) {
        pid_t r = wait_thread(tid, status, __WALL);
        if (r == tid) return status.stopped();
        if (r < 0 && errno != EINTR) return false;
    }
}
} // namespace

LinuxProcess::LinuxProcess(pid_t pid, bool attached)
    : pid_(pid), attached_(attached), arch_(arch::host_architecture()),
      memory_(std::make_unique<AddressSpace>(arch_.breakpoint_instruction())),
      trap_sites_(
          arch_, *memory_,
          {[this](std::uint64_t addr, std::span<std::uint8_t> out) {
               return read_memory(addr, out);
           },
           [this](std::uint64_t addr, bool stepped) { return check_site_address(addr, stepped); },
           [this](std::uint64_t near, std::size_t size) {
               return fast_sites_.allocate_pad(near, size);
           },
           [this](pid_t tid) { return registers_.snapshot(tid, false); },
           [this] { publish_code_patches(); }}),
      branch_traces_(
          arch_, threads_, memory_->breakpoints(),
          [this](pid_t tid) { return registers_.read_pc(tid); },
          [this](std::uint64_t addr, std::span<std::uint8_t> out) {
              return read_memory(addr, out);
          }),
      registers_(threads_, arch_, branch_traces_),
      remote_calls_(pid_, arch_, threads_, registers_, *memory_),
      fork_children_(pid_, *memory_,
                     [this](pid_t child, bool jumps) { clean_child(child, jumps); }) {
    memory_->breakpoints().on_change([this] { publish_code_patches(); });
    WaitRouter::instance().enlist(*this);
}

LinuxProcess::~LinuxProcess() {
    WaitRouter::instance().leave(*this);
    fork_children_.release_reported(threads_, chosen_, reported_);
    code_guard::forget(pid_);
}

// What tpagent has put in the program's code, byte by byte, for the code guard: a breakpoint
// on a fast tracepoint's jump saved a byte of the jump, whose own saved bytes are the program's.
void LinuxProcess::publish_code_patches() const {
    if (!alive_ || !code_guard::running()) return;
    std::map<std::uint64_t, std::pair<std::uint8_t, std::uint8_t>> bytes; // clean, current
    fast_sites_.for_each_patch([&](std::uint64_t addr, std::span<const std::uint8_t> original,
                                   std::span<const std::uint8_t> patch) {
        for (std::size_t i = 0; i < patch.size() && i < original.size(); ++i)
            bytes[addr + i] = {original[i], patch[i]};
    });
    const auto insn = arch_.breakpoint_instruction();
    memory_->breakpoints().for_each_site(
        [&](std::uint64_t addr, std::span<const std::uint8_t> original, bool in_memory) {
            for (std::size_t i = 0; i < original.size() && i < insn.size(); ++i) {
                auto it = bytes.try_emplace(addr + i, original[i], original[i]).first;
                it->second.second = in_memory ? insn[i] : original[i];
            }
        });
    std::vector<CodePatch> patches;
    for (const auto& [addr, pair] : bytes) {
        if (patches.empty() || patches.back().addr + patches.back().clean.size() != addr)
            patches.push_back({addr, {}, {}});
        patches.back().clean.push_back(pair.first);
        patches.back().current.push_back(pair.second);
    }
    // A program tpagent started dies with it, as gdbserver's do, unless a trace runs in it.
    // (A breakpoint carried by a jump is no trace.)
    code_guard::publish(pid_, patches,
                        !attached_ && trap_sites_.empty() && !fast_sites_.has_tracepoints());
}

Status LinuxProcess::finish_setup() {
    publish_code_patches();
    memory_->open(pid_);
    executable_ = read_link(fmt::format("/proc/{}/exe", pid_));
    return ok_status();
}

Result<std::unique_ptr<LinuxProcess>> LinuxProcess::launch(const LaunchSpec& spec) {
    if (spec.program.empty()) return make_error(ErrorCode::NotAllowed, "no program to run");
    std::vector<std::string> argv_s = spec.wrapper;
    argv_s.insert(argv_s.end(), spec.program.begin(), spec.program.end());
    std::vector<char*> argv;
    argv.reserve(argv_s.size() + 1);
    for (auto& s : argv_s)
        argv.push_back(s.data());
    argv.push_back(nullptr);

    std::string preload;
    if (!spec.preload.empty()) {
        const char* old = getenv("LD_PRELOAD");
        preload = old && *old ? spec.preload + ":" + old : spec.preload;
    }
    // A pipe tells the parent whether exec failed (it closes on a successful exec).
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return system_error("pipe");
    pid_t child = fork();
    if (child < 0) return system_error("fork");
    if (child == 0) {
        close(fds[0]);
        unblock_child_signal();
        // A group of its own: tpagent hands it the terminal (terminal.hpp), and interrupts it
        // as a group.
        setpgid(0, 0);
        // What tpagent ignores or handles, the program must not inherit (an ignored SIGPIPE
        // would turn its write to a closed pipe into EPIPE instead of its end; SIGUSR1 takes
        // tpagent's snapshots).
        for (int sig : {SIGPIPE, SIGXFSZ, SIGTTOU, SIGTTIN, SIGUSR1})
            std::signal(sig, SIG_DFL);
        if (spec.stdio_is_protocol) {
            int null_fd = open("/dev/null", O_RDONLY);
            if (null_fd >= 0) dup2(null_fd, 0);
            dup2(2, 1);
        }
        if (spec.disable_randomization) personality(ADDR_NO_RANDOMIZE);
        // Environment changes go in after fork, in the child (tpagent is single-threaded).
        for (const auto& [name, value] : spec.environment) {
            if (value)
                setenv(name.c_str(), value->c_str(), 1);
            else
                unsetenv(name.c_str());
        }
        if (!preload.empty()) {
            const char* now = getenv("LD_PRELOAD"); // gdb may have set one too: keep both
            const std::string both = now && *now && preload.find(now) == std::string::npos
                                         ? spec.preload + ":" + now
                                         : preload;
            setenv("LD_PRELOAD", both.c_str(), 1);
        }
        ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
        execvp(argv[0], argv.data());
        int err = errno;
        (void)!write(fds[1], &err, sizeof err); // the parent also sees the pipe close
        _exit(127);
    }
    close(fds[1]);
    int exec_errno = 0;
    ssize_t n = read(fds[0], &exec_errno, sizeof exec_errno);
    close(fds[0]);
    WaitStatus status;
    if (n == sizeof exec_errno) {
        wait_thread(child, status, 0);
        // gdbserver's words, its last line included (scripts wait for it).
        return make_error(ErrorCode::SystemError,
                          fmt::format("Cannot exec {}: {}.\nDuring startup program exited with "
                                      "code 127.",
                                      argv_s[0], std::strerror(exec_errno)));
    }
    if (!wait_for_stop(child, status))
        return make_error(ErrorCode::SystemError, "program exited during start-up");
    if (ptrace(PTRACE_SETOPTIONS, child, nullptr,
               reinterpret_cast<void*>(launch_ptrace_options())) != 0) {
        // Without them its threads and execs would go unseen: better not to run it at all.
        Error e = system_error("PTRACE_SETOPTIONS");
        ::kill(child, SIGKILL);
        wait_thread(child, status, __WALL);
        return e;
    }
    // With a wrapper, the stop above was the wrapper's exec: run on to the program's exec.
    if (!spec.wrapper.empty()) {
        while (true) {
            ptrace(PTRACE_CONT, child, nullptr, nullptr);
            if (!wait_for_stop(child, status))
                return make_error(ErrorCode::SystemError,
                                  "wrapper exited before starting the program");
            if (status.stop_signal() == SIGTRAP && status.ptrace_event() == PTRACE_EVENT_EXEC)
                break;
        }
    }
    if (!spec.stdio_is_protocol) terminal::give_to(child); // its group is its own (setpgid)
    std::unique_ptr<LinuxProcess> inf(new LinuxProcess(child, false));
    inf->add_thread(child, false);
    inf->finish_setup();
    spdlog::debug("launched {} as pid {}", spec.program.front(), child);
    return inf;
}

namespace {
// gdbserver's words for a failed attach, with why when /proc says (gdb's testsuite matches
// them): "Cannot attach to process N: Operation not permitted (1), process N is already
// traced by process M".
Error attach_failure(pid_t pid, int error) {
    std::string why = fmt::format("{} ({})", std::strerror(error), error);
    const std::string tracer = status_field(pid, "TracerPid");
    if (!tracer.empty() && tracer != "0")
        why += fmt::format(", process {} is already traced by process {}", pid, tracer);
    if (status_field(pid, "State").starts_with("Z"))
        why += fmt::format(", process {} is a zombie - the process has already terminated", pid);
    return make_error(ErrorCode::SystemError,
                      fmt::format("Cannot attach to process {}: {}", pid, why));
}
} // namespace

Result<std::unique_ptr<LinuxProcess>> LinuxProcess::attach(pid_t pid) {
    std::unique_ptr<LinuxProcess> inf(new LinuxProcess(pid, true));
    // Threads may be created while we attach: repeat until no new ones appear.
    bool found_new = true;
    while (found_new) {
        found_new = false;
        for (pid_t tid : list_tasks(pid)) {
            if (inf->threads_.count(tid)) continue;
            if (ptrace(PTRACE_ATTACH, tid, nullptr, nullptr) != 0) {
                if (tid == pid) return attach_failure(pid, errno);
                continue; // thread exited meanwhile
            }
            WaitStatus status;
            if (!wait_for_stop(tid, status)) continue;
            if (ptrace(PTRACE_SETOPTIONS, tid, nullptr, reinterpret_cast<void*>(kPtraceOptions)) !=
                0)
                spdlog::warn("thread {}: PTRACE_SETOPTIONS: {}: its new threads go unseen", tid,
                             std::strerror(errno));
            inf->add_thread(tid, false);
            found_new = true;
        }
    }
    if (inf->threads_.empty())
        return make_error(ErrorCode::NoProcess,
                          fmt::format("Cannot attach to process {}: No such process (3)", pid));
    inf->finish_setup();
    return inf;
}

void LinuxProcess::add_thread(pid_t tid, bool awaiting_first_stop) {
    LinuxThread t;
    t.kernel.took_stop();
    if (awaiting_first_stop) t.owed_sigstop = OwedSigstop::First;
    threads_.emplace(tid, std::move(t));
}

std::vector<pid_t> LinuxProcess::thread_ids() const {
    // Non-stop: a new thread is listed (running) before its first stop, so that gdb stopping
    // every thread stops it too (else gdb finds it running after its stop-all).
    std::vector<pid_t> ids;
    for (const auto& [tid, t] : threads_)
        if (!t.awaiting_first_stop() || non_stop_) ids.push_back(tid);
    return ids;
}

std::string LinuxProcess::thread_name(pid_t tid) const {
    std::string name = read_file(fmt::format("/proc/{}/task/{}/comm", pid_, tid));
    while (!name.empty() && name.back() == '\n')
        name.pop_back();
    return name;
}

std::vector<StaticMarker> LinuxProcess::static_markers() const {
    if (!alive()) return {};
    return sdt_markers_of_process(pid_, arch_);
}

Result<std::size_t> LinuxProcess::read_memory(std::uint64_t addr, std::span<std::uint8_t> out) {
    std::size_t got = 0;
    if (auto s = memory_->read_raw(addr, out, got); !s) return s.error();
    memory_->breakpoints().unshadow(addr, out.first(got));
    // Fast tracepoint jumps are hidden too: gdb sees the program's own code.
    fast_sites_.hide_jumps(addr, out.first(got));
    return got;
}

std::uint64_t LinuxProcess::read_only_image_extent(std::uint64_t addr, std::uint64_t length) {
    if (!alive()) return 0;
    return process::read_only_image_extent(
        read_maps(pid_), addr, length,
        [this](std::uint64_t at, std::span<std::uint8_t> out) { return read_all(at, out); });
}

bool LinuxProcess::read_all(std::uint64_t addr, std::span<std::uint8_t> out) {
    auto got = read_memory(addr, out);
    return got && *got == out.size();
}

std::optional<std::string> LinuxProcess::library_list() {
    return svr4_library_list(
        read_file(fmt::format("/proc/{}/auxv", pid_)),
        [this](std::uint64_t addr, std::span<std::uint8_t> out) { return read_all(addr, out); });
}

// Of the program's code, under the fast tracepoints' jumps and the breakpoints
// (LinuxFastSites::write_code).
Status LinuxProcess::write_memory(std::uint64_t addr, std::span<const std::uint8_t> data) {
    if (data.empty()) return ok_status();
    branch_traces_.forget_decoded(); // the branch recorder decodes the code anew
    return fast_sites_.write_code(addr, data);
}

void LinuxProcess::forget_image() {
    memory_->forget_all();
    tls_layout_.reset();
    for (auto& [tid, t] : threads_)
        t.end<thread_activity::RunningToBlockEnd>(); // (gone with the rest)
    trap_sites_.forget();
    fast_sites_.forget();
    debug_points_.forget_code();
    publish_code_patches();
}

void LinuxProcess::mark_dead() {
    fork_children_.stop_following(); // while the code put back in them is known
    fork_children_.unshare_memory(); // a vfork child's breakpoints stay in its parent's memory
    branch_traces_.clear();          // (a vfork child places no breakpoint of the recorder's)
    vfork_running_ = false;
    alive_ = false;
    running_ = false;
    stopping_all_ = false;
    threads_.clear();
    forget_image();
    code_guard::forget(pid_); // gone or let go: nothing for the watchdog to do with it
}

Status LinuxProcess::kill() {
    fork_children_.release_reported(threads_, chosen_, reported_);
    if (!alive_) return ok_status();
    ::kill(pid_, SIGKILL);
    // Reap every thread so nothing is left as a zombie.
    WaitStatus status;
    while (true) {
        pid_t r = WaitRouter::instance().wait(*this, status, __WALL);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        if (r == pid_ && status.ended()) break;
        if (!threads_.count(r)) fork_children_.followed_event(r, status); // not this process's
    }
    if (!attached_) terminal::take_back(); // the group it was given is gone
    mark_dead();
    return ok_status();
}

Status LinuxProcess::detach() {
    fork_children_.release_reported(threads_, chosen_, reported_);
    if (!alive_) return ok_status();
    trap_sites_.remove_all();
    fast_sites_.remove_carriers(); // (gdb's breakpoints carried by jumps)
    memory_->breakpoints().remove_all();
    debug_points_.forget_code();
    debug_points_.forget_hw();
    for (auto& [tid, t] : threads_) {
        int sig = 0;
        const bool ours_owed = t.owed_sigstop == OwedSigstop::Ours;
        if (!t.kernel.stopped() || ours_owed) {
            // Collect the SIGSTOP we sent so it does not stop the program after we leave.
            if (!ours_owed) tgkill(pid_, tid, SIGSTOP);
            // Stopped with our SIGSTOP still to come (another stop came first): on to it.
            if (t.kernel.stopped()) ptrace(PTRACE_CONT, tid, nullptr, nullptr);
            WaitStatus status;
            while (wait_for_stop(tid, status) && status.stop_signal() != SIGSTOP) {
                if (status.stop_signal() != SIGTRAP) sig = status.stop_signal();
                ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
                sig = 0;
            }
        }
        if (t.pending && t.pending->kind == StopEvent::Kind::Signal &&
            t.pending->signal != SIGTRAP && t.pending->signal != SIGSTOP)
            sig = t.pending->signal;
        // Jumps that stay (a disconnected trace): a thread left inside one's displaced
        // instructions by a step goes on from their copy.
        if (!fast_sites_.empty())
            if (auto r = fast_sites_.resume_inside_jump(tid, t, false); !r)
                spdlog::warn("{}", r.error().text);
        // Clears the debug registers (no hardware point is left now); a thread gone meanwhile has
        // none.
        if (auto a = debug_points_.hw().apply(tid); !a)
            spdlog::warn("thread {}: debug registers not cleared: {}", tid, a.error().text);
        ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig)));
    }
    mark_dead();
    return ok_status();
}

// Where a breakpoint or a jump of tpagent's may go (the trap sites as the fast sites see them
// included).
Status LinuxProcess::check_interruptible(std::uint64_t addr, bool stepped) {
    const std::uint64_t window = arch_.interruption_window();
    if (window == 0) return ok_status();
    // Within addr's own 4 KiB, which is mapped: a read across into a hole would fail.
    constexpr std::uint64_t kPage = 4096;
    const std::uint64_t page = addr & ~(kPage - 1);
    const std::uint64_t start = addr - std::min(window, addr - page);
    std::vector<std::uint8_t> code(addr - start + std::min(window, page + kPage - addr));
    auto got = read_memory(start, code); // breakpoints hidden: the program's own code
    if (!got) return got.error();
    const std::size_t at = addr - start;
    if (*got <= at) return ok_status(); // no code read from addr on: nothing to find
    const std::span<const std::uint8_t> read(code.data(), *got);
    const auto before = read.first(at), from = read.subspan(at);
    if (auto hazard = arch_.interruption_hazard(addr, before, from, stepped))
        return make_error(ErrorCode::NotAllowed, *hazard);
    return ok_status();
}

Status LinuxProcess::check_site_address(std::uint64_t addr, bool stepped) {
    fast_sites_.uncarry_within(addr, 1); // gdb's breakpoints give way to a trap site
    if (const auto fast = fast_sites_.covering(addr))
        return make_error(ErrorCode::NotAllowed,
                          fmt::format("a fast tracepoint at 0x{:x} has replaced the instruction "
                                      "at 0x{:x}",
                                      fast->site, addr));
    return check_interruptible(addr, stepped);
}

bool LinuxProcess::FastSiteAccess::trap_site_at(std::uint64_t addr) const {
    return p_.trap_sites_.has(addr);
}

bool LinuxProcess::FastSiteAccess::trap_pads_in_use() const {
    return p_.trap_sites_.any_pad();
}

std::optional<std::uint64_t> LinuxProcess::FastSiteAccess::out_of_trap_pad(LinuxThread& t,
                                                                           std::uint64_t pc) {
    std::optional<std::uint64_t> back;
    for (const auto& [addr, site] : p_.trap_sites_.sites()) {
        if (auto at = arch::original_address(site.code, site.pad, addr, pc)) {
            back = at;
            if (*at == addr) t.collected_at = addr; // its hit was collected before the pad
        }
    }
    for (const auto& [addr, site] : p_.trap_sites_.passing_pads()) {
        if (auto at = arch::original_address(site.code, site.pad, addr, pc)) {
            back = at;
            // Its hit was decided before the pad: not again when it resumes.
            if (*at == addr && t.is_doing<thread_activity::Plain>())
                t.activity = thread_activity::PassingBreakpoint{addr};
        }
    }
    return back;
}

// What a forked child needs of the process that forked it (the children themselves are kept
// by LinuxForkChildren): its copy of the code put back, and, taken by gdb, a process of its own.
void LinuxProcess::clean_child(pid_t child, bool jumps) {
    const int mem = ::open(fmt::format("/proc/{}/mem", child).c_str(), O_RDWR | O_CLOEXEC);
    auto put = [&](std::uint64_t addr, std::span<const std::uint8_t> bytes) {
        if (mem < 0 || ::pwrite(mem, bytes.data(), bytes.size(), static_cast<off_t>(addr)) !=
                           static_cast<ssize_t>(bytes.size()))
            spdlog::warn("forked child {}: cannot restore the code at 0x{:x}", child, addr);
    };
    // Breakpoints first: one on a fast tracepoint's jump saved a byte of the jump, which
    // the jump's own original bytes then replace.
    memory_->breakpoints().for_each_original(put);
    if (jumps)
        fast_sites_.for_each_patch([&](std::uint64_t addr, std::span<const std::uint8_t> original,
                                       std::span<const std::uint8_t>) { put(addr, original); });
    if (mem >= 0) ::close(mem);
}

std::unique_ptr<LinuxProcess> LinuxProcess::forked_child(pid_t child) {
    // Traced since its birth, with the parent's ptrace options, and stopped. Taken as
    // attached: it shares its parent's process group and terminal, neither of them its own
    // (Ctrl-C goes to it alone).
    std::unique_ptr<LinuxProcess> inf(new LinuxProcess(child, true));
    inf->add_thread(child, false);
    inf->finish_setup();
    return inf;
}

} // namespace tpagent::process
