#include "server/server.hpp"
#include "process/linux/linux_process.hpp"
#include "process/linux/svr4_libraries.hpp"
#include "experiment/trace_file_writer.hpp"
#include "arch/arch.hpp"
#include "base/proc_files.hpp"
#include "protocol/hex.hpp"
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <elf.h>
#include <fcntl.h>
#include <filesystem>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <csignal>
#include <cstring>
#include <utility>
#include <cstdio>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::server {

namespace asio = boost::asio;

namespace {
constexpr const char* kInprocLibrary = "libtpagent-inproc.so";
// The same agent as an image tpagent maps itself (inproc/image.cpp).
constexpr const char* kInprocImage = "libtpagent-inproc-image.so";

// --inproc's library: as given, or `name` beside the tpagent executable (the build tree), or
// where `cmake --install` puts it relative to tpagent (lib/tpagent/).
Result<std::string> inproc_library_path(const std::string& given,
                                        const char* name = kInprocLibrary) {
    std::string path = given;
    if (path.empty()) {
        std::string self = read_link("/proc/self/exe");
        std::string bin = self.substr(0, self.rfind('/') + 1);
        path = bin + name;
#ifdef TPAGENT_INPROC_FROM_BIN
        if (std::string installed = bin + TPAGENT_INPROC_FROM_BIN "/" + name;
            access(path.c_str(), R_OK) != 0 && access(installed.c_str(), R_OK) == 0)
            path = installed;
#endif
    }
    if (access(path.c_str(), R_OK) != 0)
        return make_error(ErrorCode::NotFound,
                          fmt::format("--inproc: cannot read {}: {}", path, std::strerror(errno)));
    // The dynamic loader resolves a relative name against the program's directory.
    if (path.front() != '/') {
        char* full = realpath(path.c_str(), nullptr);
        if (full) {
            path = full;
            std::free(full);
        }
    }
    return path;
}

// The auxiliary vector without AT_SYSINFO_EHDR: gdb would read the vDSO's image from memory
// that no longer exists.
std::string without_vdso(std::string_view auxv) {
    constexpr std::size_t kEntry = 2 * sizeof(std::uint64_t);
    std::string out;
    for (std::size_t at = 0; at + kEntry <= auxv.size(); at += kEntry) {
        std::uint64_t type = 0;
        std::memcpy(&type, auxv.data() + at, sizeof type);
        if (type != AT_SYSINFO_EHDR) out.append(auxv.substr(at, kEntry));
    }
    return out;
}

// The executable mappings of files in a /proc/PID/maps text
// ("start-end perms offset dev inode path").
std::vector<ProgramImage::CodeMapping> code_mappings(const std::string& maps) {
    std::vector<ProgramImage::CodeMapping> out;
    std::istringstream lines(maps);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream in(line);
        std::string range, perms, offset, device, path;
        unsigned long inode = 0;
        in >> range >> perms >> offset >> device >> inode;
        std::getline(in >> std::ws, path);
        const std::size_t dash = range.find('-');
        if (perms.size() < 3 || perms[0] != 'r' || perms[2] != 'x' || dash == std::string::npos ||
            !path.starts_with('/') || path.ends_with(" (deleted)"))
            continue;
        auto start = protocol::parse_hex_u64(std::string_view(range).substr(0, dash));
        auto end = protocol::parse_hex_u64(std::string_view(range).substr(dash + 1));
        auto file_offset = protocol::parse_hex_u64(offset);
        if (!start || !end || !file_offset || *start >= *end) continue;
        out.push_back({*start, *end, *file_offset, static_cast<ino_t>(inode), path});
    }
    return out;
}
} // namespace

std::size_t read_code(const ProgramImage& image, std::uint64_t addr, std::span<std::uint8_t> out) {
    for (const auto& m : image.code) {
        if (addr < m.start || addr >= m.end) continue;
        const int fd = open(m.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return 0;
        struct stat st {};
        ssize_t got = -1;
        if (fstat(fd, &st) == 0 && st.st_ino == m.inode) {
            const std::size_t n = std::min<std::uint64_t>(out.size(), m.end - addr);
            got = pread(fd, out.data(), n, static_cast<off_t>(m.offset + (addr - m.start)));
        }
        close(fd);
        return got > 0 ? static_cast<std::size_t>(got) : 0;
    }
    return 0;
}

TargetFactory linux_targets() {
    return {[](const process::LaunchSpec& spec) -> Result<std::unique_ptr<process::Target>> {
                auto inferior = process::LinuxProcess::launch(spec);
                if (!inferior) return inferior.error();
                return std::unique_ptr<process::Target>(std::move(*inferior));
            },
            [](pid_t pid) -> Result<std::unique_ptr<process::Target>> {
                auto inferior = process::LinuxProcess::attach(pid);
                if (!inferior) return inferior.error();
                return std::unique_ptr<process::Target>(std::move(*inferior));
            }};
}

Server::Server(asio::io_context& io, ServerOptions options, TargetFactory targets)
    : io_(io), options_(std::move(options)), targets_(std::move(targets)), child_events_(io),
      trace_poll_timer_(io), record_timer_(io), agent_lines_timer_(io), snapshot_timer_(io),
      snapshot_signal_(io, SIGUSR1), experiment_(arch::host_architecture()) {
    experiment_.set_recording(options_.record_dir || options_.record_host);
    experiment_.set_make_room([this] {
        if (recorder_) recorder_->poll(experiment_);
    });
    seal_cut_recording();
    if (options_.snapshot_dir)
        snapshots_.emplace(experiment::SnapshotOptions{
            *options_.snapshot_dir, options_.snapshot_files, options_.record_min_free});
    wait_for_snapshot_signal();
    // A trap trigger's snapshot is taken while the thread that hit it is stopped there: the
    // window ends at the event.
    experiment_.set_on_trap_hit([this](std::uint32_t number) {
        if (snapshot_trigger_ && snapshot_trigger_->tracepoint == number) check_snapshot_trigger();
    });
    experiment_.set_follow_forks(options_.trace_follow_fork);
    // All-stop over several processes: the others stop before a process's end is reaped (a
    // parent waiting for it would run on, maybe to its own end, before gdb hears of the first).
    process::LinuxProcess::before_process_end([this](pid_t pid) {
        if (non_stop_ || !session_ || session_->closed()) return;
        if (process::Target* ending = find_process(pid)) stop_others(ending);
    });
    // A program without the in-process agent gets it when a fast tracepoint needs it.
    if (options_.inject) {
        if (auto lib = inproc_library_path(options_.inproc.value_or("")); lib)
            experiment_.set_agent_library(*lib);
        else
            spdlog::warn("fast tracepoints only in programs started with the in-process agent: {}",
                         lib.error().text);
        if (auto image = inproc_library_path("", kInprocImage); image)
            experiment_.set_agent_image(*image);
        else
            spdlog::warn("the in-process agent only through the program's dlopen: {}",
                         image.error().text);
    }
    if (options_.relocate_with_gdb && !arch::host_architecture().gdb_relocates_instructions())
        spdlog::warn("--relocate-with-gdb is ignored here: gdb relocates x86 instructions only "
                     "(tpagent relocates these itself)");
}

Server::~Server() {
    process::LinuxProcess::before_process_end(nullptr);
}

void Server::watch_fast_trace() {
    if (trace_poll_armed_ || !experiment_.fast_running()) return;
    trace_poll_armed_ = true;
    trace_poll_timer_.expires_after(std::chrono::milliseconds(5));
    trace_poll_timer_.async_wait([this](const boost::system::error_code& ec) {
        trace_poll_armed_ = false;
        if (ec) return;
        if (experiment_.fast_running()) experiment_.poll(inferior_.get());
        watch_fast_trace();
    });
}
bool Server::stdio_transport() const {
    return options_.comm == "-";
}

namespace {
// gdbserver's rule for a program named without a directory: a regular file of that name in
// the current directory is that file (it would not be run from PATH); any other such name
// is looked up in PATH when it is run.
std::string program_path(const std::string& name) {
    if (name.find('/') != std::string::npos) return name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(name, ec)) return name;
    auto absolute = std::filesystem::absolute(name, ec);
    return ec ? name : absolute.string();
}
} // namespace

void Server::apply_gdb_settings(process::Target& program) {
    program.set_pass_signals(pass_signals_);
    program.set_catch_syscalls(catch_syscalls_);
    program.set_event_reports(event_reports_);
    // After what the program printed itself before this hit.
    program.debug_points().set_command_output([this](std::string_view text) {
        take_agent_lines();
        write_command_output(text);
    });
    program.debug_points().set_ring_reader([this] { take_agent_lines(); });
    if (auto m = program.set_non_stop(non_stop_); !m)
        spdlog::warn("non-stop mode: {}", m.error().text);
}

Status Server::start_program(const std::vector<std::string>& named) {
    std::vector<std::string> program = named;
    if (!program.empty()) program.front() = program_path(program.front());
    process::LaunchSpec spec;
    spec.program = program;
    spec.wrapper = options_.wrapper;
    spec.disable_randomization = options_.disable_randomization;
    spec.stdio_is_protocol = stdio_transport();
    spec.environment = environment_.changes();
    if (options_.inproc) {
        auto lib = inproc_library_path(*options_.inproc);
        if (!lib) return lib.error();
        spec.preload = *lib;
    }
    auto inf = targets_.launch(spec);
    if (!inf) return inf.error();
    exited_.reset(); // a new program takes the place of what an ended one left
    last_program_ = named;
    inferior_ = std::move(*inf);
    apply_gdb_settings(*inferior_);
    fmt::print(stderr, "Process {} created; pid = {}\n", program.front(), inferior_->pid());
    std::fflush(stderr);
    return ok_status();
}

Result<pid_t> Server::start_beside(const std::vector<std::string>& program) {
    std::unique_ptr<process::Target> served = std::move(inferior_);
    if (auto s = start_program(program); !s) {
        inferior_ = std::move(served);
        return s.error();
    }
    const pid_t pid = inferior_->pid();
    keep_beside(std::move(served));
    return pid;
}

Status Server::attach_beside(pid_t pid) {
    std::unique_ptr<process::Target> served = std::move(inferior_);
    if (auto s = attach_to(pid); !s) {
        inferior_ = std::move(served);
        return s;
    }
    keep_beside(std::move(served));
    return ok_status();
}

void Server::keep_beside(std::unique_ptr<process::Target> served) {
    if (!served || !served->alive()) return;                 // (what ended there is gone with it)
    if (experiment_.running()) std::swap(inferior_, served); // the trace's program stays served
    held_.push_back(std::move(served));
}

Status Server::attach_to(pid_t pid) {
    // gdbserver's words for a pid that names no process.
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return make_error(ErrorCode::NoProcess, fmt::format("Cannot attach to process {}: {} ({})",
                                                            pid, std::strerror(ESRCH), ESRCH));
    auto inf = targets_.attach(pid);
    if (!inf) return inf.error();
    exited_.reset();
    inferior_ = std::move(*inf);
    apply_gdb_settings(*inferior_);
    fmt::print(stderr, "Attached; pid = {}\n", pid);
    std::fflush(stderr);
    return ok_status();
}

void Server::adopt(std::unique_ptr<process::Target> child) {
    exited_.reset();
    if (inferior_) held_.push_back(std::move(inferior_)); // (a held one served meanwhile)
    inferior_ = std::move(child);
    apply_gdb_settings(*inferior_);
}

Status Server::kill_inferior() {
    exited_.reset(); // what a program that already ended left: gdb is done with it
    if (!inferior_) return ok_status();
    stashed_.erase(inferior_->pid());
    if (experiment_.running())
        experiment_.stop_for({protocol::TraceStopReason::Kind::Unknown, {}, 0}, inferior_.get());
    auto s = inferior_->kill();
    serve_next_held();
    return s;
}

Status Server::detach_inferior() {
    if (!inferior_) return make_error(ErrorCode::NoProcess, "no process to detach from");
    if (experiment_.running())
        experiment_.stop_for({protocol::TraceStopReason::Kind::Unknown, {}, 0}, inferior_.get());
    fmt::print(stderr, "Detaching from process {}\n", inferior_->pid());
    std::fflush(stderr);
    stashed_.erase(inferior_->pid());
    // Nothing of the trace's may keep the program's memory once it is let go.
    experiment_.let_go(inferior_->pid());
    auto s = inferior_->detach();
    serve_next_held();
    return s;
}

void Server::forget_inferior() {
    serve_next_held();
}

void Server::serve_next_held() {
    inferior_.reset();
    if (held_.empty()) return;
    inferior_ = std::move(held_.front());
    held_.erase(held_.begin());
}

void Server::kill_all() {
    while (inferior_)
        (void)kill_inferior();
}

std::vector<std::unique_ptr<process::Target>>::iterator Server::find_held(pid_t pid) {
    return std::find_if(held_.begin(), held_.end(),
                        [pid](const auto& p) { return p->pid() == pid; });
}

process::Target* Server::held_process(pid_t pid) {
    auto it = find_held(pid);
    return it == held_.end() ? nullptr : it->get();
}

process::Target* Server::hold_fork_child(pid_t pid) {
    process::Target* forker = nullptr;
    for (process::Target* p : processes())
        if (p->fork_children().held(pid)) forker = p;
    if (!forker) return nullptr;
    std::unique_ptr<process::Target> child = forker->fork_children().take(pid);
    if (!child) return nullptr;
    apply_gdb_settings(*child);
    // A vfork child: the breakpoints gdb puts in the memory it shares with its parent are
    // the parent's once it exits or execs (gdb removes them through the parent).
    const pid_t parent = forker->pid();
    child->fork_children().when_memory_unshared(
        [this, parent](const process::HeldForkChildren::BreakpointBytes& bps) {
            process::Target* p =
                inferior_ && inferior_->pid() == parent ? inferior_.get() : held_process(parent);
            if (p) p->fork_children().take_breakpoints(bps);
        });
    held_.push_back(std::move(child));
    return held_.back().get();
}

Status Server::serve(pid_t pid) {
    auto it = find_held(pid);
    if (it == held_.end()) return make_error(ErrorCode::NoProcess, "no such process held");
    if (experiment_.running()) return ok_status(); // it runs beside the trace's program
    std::unique_ptr<process::Target> next = std::move(*it);
    held_.erase(it);
    if (inferior_) held_.push_back(std::move(inferior_));
    inferior_ = std::move(next);
    apply_gdb_settings(*inferior_); // what gdb set since it was taken (catch syscall, say)
    return ok_status();
}

bool Server::detach_held(pid_t pid) {
    auto it = find_held(pid);
    if (it == held_.end()) return false;
    stashed_.erase(pid);
    fmt::print(stderr, "Detaching from process {}\n", pid);
    std::fflush(stderr);
    if (auto d = (*it)->detach(); !d) spdlog::warn("process {}: {}", pid, d.error().text);
    held_.erase(it);
    return true;
}

void Server::detach_all_held() {
    while (!held_.empty())
        detach_held(held_.front()->pid());
}

bool Server::kill_held(pid_t pid) {
    auto it = find_held(pid);
    if (it == held_.end()) return false;
    stashed_.erase(pid);
    if (auto k = (*it)->kill(); !k) spdlog::warn("process {}: {}", pid, k.error().text);
    held_.erase(it);
    return true;
}

void Server::wait_for_children() {
    child_events_.watch([this] { pump_events(); });
}

void Server::pump_events() {
    // Each process's events in turn, until none has one: a wait of one process may have taken
    // another's status (process::WaitRouter keeps it for that one's poll).
    for (bool more = true; more;) {
        more = false;
        // (A program that ended may still have its end to hand out: non-stop's pauses keep it.)
        while (inferior_) {
            auto ev = inferior_->poll();
            if (!ev) break;
            more = true;
            on_inferior_event(*ev);
        }
        std::vector<pid_t> held;
        for (const auto& p : held_)
            held.push_back(p->pid());
        for (pid_t pid : held) {
            auto* p = held_process(pid);
            if (!p) continue;
            if (auto ev = p->poll()) {
                more = true;
                on_held_event(pid, *ev);
            }
        }
    }
}

namespace {
// How a process ended, in gdbserver's words.
void print_end(const process::StopEvent& ev) {
    if (ev.kind == process::StopEvent::Kind::Exited) {
        fmt::print(stderr, "\nChild exited with status {}\n", ev.exit_code);
    } else if (ev.kind == process::StopEvent::Kind::Killed) {
        const char* abbrev = sigabbrev_np(ev.signal);
        fmt::print(stderr, "\nChild terminated with signal = 0x{:x} (SIG{})\n", ev.signal,
                   abbrev ? abbrev : "UNKNOWN");
    }
    std::fflush(stderr);
}

// A stop that says nothing gdb must hear: the one stop_all_now makes.
bool quiet_stop(const process::StopEvent& ev) {
    return ev.kind == process::StopEvent::Kind::Signal && ev.signal == 0 && !ev.fork_child &&
           !ev.exec_path && !ev.syscall && !ev.watch_addr && !ev.vfork && !ev.vfork_done &&
           !ev.thread_created && !ev.thread_exited && !ev.no_resumed;
}
} // namespace

std::vector<process::Target*> Server::processes() {
    std::vector<process::Target*> out;
    if (inferior_ && inferior_->alive()) out.push_back(inferior_.get());
    for (const auto& p : held_)
        if (p->alive()) out.push_back(p.get());
    return out;
}

process::Target* Server::find_process(pid_t pid) {
    for (process::Target* p : processes())
        if (p->pid() == pid) return p;
    return nullptr;
}

void Server::stop_others(const process::Target* reporting) {
    if (stopping_others_) return; // (an end seen inside one of the waits below)
    stopping_others_ = true;
    for (process::Target* p : processes()) {
        if (p == reporting || !p->running()) continue;
        const pid_t pid = p->pid();
        auto ev = p->stop_all_now();
        if (!ev || quiet_stop(*ev)) continue;
        spdlog::debug("process {}: its event waits for gdb's next resume", pid);
        // (An end: its process goes when gdb is told, since this may run inside a wait of
        // its own.)
        if (ev->kind != process::StopEvent::Kind::Signal) print_end(*ev);
        stash(*ev);
    }
    stopping_others_ = false;
}

void Server::interrupt() {
    process::Target* target = inferior_.get();
    if (!target || !target->running())
        for (process::Target* p : processes())
            if (p->running()) {
                target = p;
                break;
            }
    if (target) target->interrupt();
}

bool Server::any_running(const process::Target* except) {
    for (process::Target* p : processes())
        if (p != except && p->running()) return true;
    return false;
}

std::vector<pid_t> Server::stashed_processes() const {
    std::vector<pid_t> out;
    for (const auto& [pid, ev] : stashed_)
        out.push_back(pid);
    return out;
}

std::optional<process::StopEvent> Server::take_stashed_event(pid_t pid) {
    auto it = stashed_.find(pid);
    if (it == stashed_.end()) return std::nullopt;
    process::StopEvent ev = it->second;
    stashed_.erase(it);
    if (ev.kind == process::StopEvent::Kind::Signal) return ev;
    // An end found by stop_others: the process goes now.
    if (inferior_ && inferior_->pid() == pid && !inferior_->alive()) {
        end_trace_with(ev);
        forget_inferior();
    } else if (auto held = find_held(pid); held != held_.end() && !(*held)->alive()) {
        held_.erase(held);
    }
    return ev;
}

void Server::on_held_event(pid_t pid, const process::StopEvent& ev) {
    take_agent_lines();
    const bool ended = ev.kind != process::StopEvent::Kind::Signal;
    if (ended) {
        print_end(ev);
        if (auto it = find_held(pid); it != held_.end()) held_.erase(it);
    }
    if (!session_ || session_->closed()) return; // (gdb's leaving let every held one go)
    if (!non_stop_ && held_back(ended ? nullptr : held_process(pid), ev)) return;
    session_->on_stop(ev);
}

void Server::stash(const process::StopEvent& ev) {
    if (ev.kind == process::StopEvent::Kind::Signal)
        stashed_.try_emplace(ev.pid, ev);
    else
        stashed_[ev.pid] = ev;
}

bool Server::held_back(const process::Target* from, const process::StopEvent& ev) {
    if (ev.no_resumed && any_running(from)) return true; // another process still runs
    if (!session_->waiting_for_stop()) {
        if (!ev.no_resumed) stash(ev);
        return true;
    }
    stop_others(from);
    return false;
}

void Server::end_trace_with(const process::StopEvent& end) {
    if (!experiment_.running()) return;
    // The traced process is gone. gdb has no stop reason for that: an error's text says it
    // ("Trace stopped by an error (process 42 exited with status 0)").
    const char* abbrev = sigabbrev_np(end.signal);
    std::string why =
        end.kind == process::StopEvent::Kind::Exited
            ? fmt::format("process {} exited with status {}", end.pid, end.exit_code)
            : fmt::format("process {} was killed by SIG{}", end.pid, abbrev ? abbrev : "?");
    experiment_.stop_for({protocol::TraceStopReason::Kind::Error, std::move(why), 0}, nullptr);
    watch_recording(); // its recording ends with it, files whole
}

void Server::on_inferior_event(const process::StopEvent& ev) {
    take_agent_lines(); // what the program printed before it stopped or ended
    print_end(ev);
    const bool ended = ev.kind != process::StopEvent::Kind::Signal;
    if (ended) end_trace_with(ev);
    if (!ended) experiment_.poll(inferior_.get());
    if (!ended && running_without_gdb_ && (ev.thread_exited || ev.thread_created)) {
        // Thread events asked for by a gdb that left: nothing to wait for.
        if (ev.thread_created) {
            process::StopEvent quiet = ev;
            quiet.signal = 0;
            deliver_signal(quiet);
        }
        return;
    }
    if (!ended && running_without_gdb_ && ev.signal != SIGTRAP) {
        deliver_signal(ev);
        return;
    }
    // All-stop over several processes: one event goes to gdb, and the others stop.
    if (session_ && !session_->closed() && !non_stop_ && !held_.empty() &&
        held_back(inferior_.get(), ev)) {
        if (ended) forget_inferior();
        return;
    }
    if (session_ && !session_->closed())
        session_->on_stop(ev);
    else
        unreported_ = ev;
    if (!ended) return;
    const bool was_attached = inferior_ && inferior_->was_attached();
    forget_inferior();
    if (running_without_gdb_) keep_exited_program(ev, was_attached, experiment_.runs() > 0);
}

// The program runs on for a disconnected trace, and gdb is not there to decide about a signal
// it stopped with: the signal is the program's, delivered as if nobody traced it (as gdbserver
// does; a SIGTERM ends it). A SIGTRAP (a breakpoint gdb left) waits for the next gdb.
void Server::deliver_signal(const process::StopEvent& ev) {
    std::vector<process::ThreadResume> all;
    for (pid_t tid : inferior_->thread_ids())
        all.push_back({tid, false, tid == ev.tid ? ev.signal : 0});
    auto resumed = inferior_->resume(all);
    if (!resumed) {
        spdlog::warn("signal {} stays undelivered: {}", ev.signal, resumed.error().text);
        unreported_ = ev;
        return;
    }
    if (*resumed) on_inferior_event(**resumed); // one more event was waiting
}

// The program ran on for a disconnected trace and ended with no gdb to see it: its trace stays
// for the next gdb, and goes to a file too when there is a --save-dir (an unattended board may
// see no gdb before it is switched off).
void Server::keep_exited_program(const process::StopEvent& end, bool was_attached, bool traced) {
    running_without_gdb_ = false;
    ExitedProgram gone{end, was_attached, std::nullopt};
    if (image_ && image_->pid == end.pid) gone.image = std::move(image_);
    image_.reset();
    exited_ = std::move(gone);
    // (Persistent breakpoint commands alone may have kept it running, with no trace run.)
    if (traced)
        fmt::print(stderr,
                   "Process {} ended during a disconnected trace; the trace is kept for gdb\n",
                   end.pid);
    else
        fmt::print(stderr, "Process {} ended while no gdb was connected\n", end.pid);
    std::fflush(stderr);
    if (traced && options_.save_dir) save_trace_automatically(end.pid);
}

void Server::save_trace_automatically(pid_t pid) {
    const std::string path = fmt::format("{}/tpagent-{}-{:%Y%m%d-%H%M%S}.tf", *options_.save_dir,
                                         pid, fmt::localtime(std::time(nullptr)));
    auto xml = arch::host_architecture().feature_xml("target.xml");
    if (auto s = experiment::write_trace_file(path, experiment_, xml ? *xml : std::string(),
                                              options_.save_dir);
        !s)
        fmt::print(stderr, "Could not save the trace: {}\n", s.error().text);
    else
        fmt::print(stderr, "Trace saved to {}\n", path);
    std::fflush(stderr);
}

void Server::accept_next() {
    listener_->async_accept([this](std::unique_ptr<Connection> conn) {
        if (!conn) {
            shutdown();
            return;
        }
        session_ = std::make_unique<Session>(*this, std::move(conn));
        // All-stop: gdb starts talking to a stopped program.
        if (inferior_ && inferior_->running()) {
            if (auto ev = inferior_->stop_all_now()) {
                if (ev->kind != process::StopEvent::Kind::Signal)
                    on_inferior_event(*ev);
                else
                    unreported_ = ev;
            }
        }
        running_without_gdb_ = false; // gdb is back, and the program stopped for it
        exited_shown_ = exited_.has_value();
        if (unreported_) session_->set_last_stop(*std::exchange(unreported_, std::nullopt));
        session_->start();
    });
}

void Server::session_closed(Session&, ConnectionEnd end) {
    // The session object may be mid-call: destroy it later, from the event loop.
    asio::post(io_, [this, end] {
        std::unique_ptr<Session> old = std::move(session_);
        // A QTStart still waiting for gdb's qRelocInsn answers never started anything.
        experiment_.abandon_relocation(inferior_.get());
        // gdb's catchpoints left with it: a program tracing on must not stop at them.
        catch_syscalls_.reset();
        event_reports_ = {}; // an exec without gdb runs on into the new program
        // What gdb held, it let go of by leaving; an event of the served program it did not
        // hear of waits for the next gdb.
        if (inferior_)
            if (auto ev = take_stashed_event(inferior_->pid())) unreported_ = ev;
        stashed_.clear();
        detach_all_held();
        if (inferior_)
            for (pid_t child : inferior_->fork_children().list())
                inferior_->fork_children().release(child);
        // (Before all-stop stops them: whether gdb left threads running.)
        const bool left_running = inferior_ && inferior_->alive() && inferior_->running();
        non_stop_ = false; // all-stop again: every thread stops, as gdb leaves it
        if (inferior_) apply_gdb_settings(*inferior_);
        if (!may_reopen()) {
            shutdown();
            return;
        }
        // A trace going on without gdb (or kept from a program that ended as this gdb left)
        // keeps tpagent up even with --once: the trace is worth something only if a gdb can
        // come back for it (gdbserver --once kills the program here, trace and all). The next
        // connection is then the one --once counts.
        // A connection gdb closed leaves the program as it was, stopped at a breakpoint say, for
        // the next gdb to find, or running on if gdb left threads running (as gdbserver does,
        // in all-stop and non-stop); one lost mid-session lets it run on, traced, since nobody
        // chose to stop there (an unattended board whose host went away).
        const bool tracing_on =
            keep_tracing_without_gdb(end == ConnectionEnd::Lost || left_running);
        // So do persistent breakpoint commands a detach left running (persist).
        const bool commands_on = running_without_gdb_ && inferior_ && inferior_->alive() &&
                                 inferior_->debug_points().persistent_commands();
        if (options_.once && !tracing_on && !commands_on && !(exited_ && !exited_shown_)) {
            shutdown();
            return;
        }
        // gdb went away without detaching: the program stays, stopped, for the next gdb. (One
        // gdb let go of for a disconnected trace runs on even if that trace has ended since,
        // say with a full buffer: an interrupt now would stop it with no gdb to see the stop.)
        if (!tracing_on && !running_without_gdb_) {
            if (experiment_.running())
                experiment_.stop_for({protocol::TraceStopReason::Kind::Disconnected, {}, 0},
                                     inferior_.get());
            if (inferior_ && inferior_->running()) inferior_->interrupt();
        }
        fmt::print(stderr,
                   "Remote side has terminated connection.  tpagent will reopen the connection.\n");
        std::fflush(stderr);
        listener_->announce();
        accept_next();
    });
}

// Another gdb may come: not after `monitor exit` or `kill`, not on stdio or a serial line, and
// only with something to debug (a program, or the trace of one that ended) or --multi.
bool Server::may_reopen() const {
    return !exit_requested_ && listener_->endpoint().kind == Endpoint::Kind::Tcp &&
           (options_.multi || (inferior_ && inferior_->alive()) || exited_);
}

bool Server::keep_tracing_without_gdb(bool resume) {
    if (!experiment_.running() || !experiment_.disconnected_tracing() || !inferior_ ||
        !inferior_->alive())
        return false;
    // Already so since gdb's detach: the image was taken then, from the stopped program; now
    // it runs, and may be ending (its /proc/PID/exe already gone).
    if (running_without_gdb_) {
        // (Leaving non-stop mode as gdb went stopped every thread.)
        (void)run_without_gdb();
        return true;
    }
    remember_image();
    // Else the program waits, stopped where gdb left it, its trace running, for the next gdb.
    return !resume || run_without_gdb();
}

bool Server::keep_commands_without_gdb() {
    if (!inferior_ || !inferior_->alive() || !inferior_->debug_points().persistent_commands())
        return false;
    if (running_without_gdb_) return true; // (a disconnected trace has it running already)
    return run_without_gdb();
}

bool Server::run_without_gdb() {
    if (!inferior_->running())
        if (auto r = inferior_->resume_all(); !r) {
            spdlog::warn("the program cannot run on without gdb: {}", r.error().text);
            return false;
        }
    running_without_gdb_ = true;
    return true;
}

void Server::remember_image() {
    ProgramImage image;
    image.pid = inferior_->pid();
    image.executable = read_link(fmt::format("/proc/{}/exe", image.pid));
    const std::string auxv = read_file(fmt::format("/proc/{}/auxv", image.pid));
    image.libraries = inferior_->library_list().value_or(std::string(process::kEmptyLibraryList));
    image.auxv = without_vdso(auxv);
    image.code = code_mappings(read_file(fmt::format("/proc/{}/maps", image.pid)));
    image_ = std::move(image);
}

void Server::shutdown() {
    // Programs we started die with us; programs we attached to go on running. A held process
    // was the program's own child (or parent): it goes on.
    detach_all_held();
    if (inferior_ && inferior_->alive()) {
        Status s = inferior_->was_attached() ? detach_inferior() : kill_inferior();
        if (!s) spdlog::warn("leaving the program: {}", s.error().text);
    }
    listener_->close();
    child_events_.cancel();
    trace_poll_timer_.cancel();
    end_recording();
    record_timer_.cancel();
    take_agent_lines();
    agent_lines_timer_.cancel();
    snapshot_timer_.cancel();
    snapshot_signal_.cancel();
    if (record_stream_ && record_stream_->undelivered())
        fmt::print(stderr, "Record stream: waiting for a host to take the last {} KiB\n",
                   record_stream_->undelivered_bytes() >> 10);
    stop_after_stream(std::chrono::steady_clock::now(),
                      record_stream_ ? record_stream_->kept() : 0);
}

// The record stream's last operations (the run's end) go to a host before tpagent ends: it
// waits while a host keeps taking them, and for one to come back (the link cut, the host tool
// started again) for kStreamWaitTime since the last progress; what no host kept is said.
void Server::stop_after_stream(std::chrono::steady_clock::time_point progress_at,
                               std::uint64_t kept) {
    const auto now = std::chrono::steady_clock::now();
    if (record_stream_ && record_stream_->kept() != kept) {
        kept = record_stream_->kept();
        progress_at = now;
    }
    if (record_stream_ && record_stream_->undelivered() && now - progress_at < kStreamWaitTime) {
        auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(20));
        timer->async_wait([this, progress_at, kept, timer](const boost::system::error_code&) {
            stop_after_stream(progress_at, kept);
        });
        return;
    }
    if (record_stream_) {
        if (const auto left = record_stream_->undelivered())
            fmt::print(stderr, "Record stream: {} operation(s) no host has kept are lost\n", left);
        record_stream_->close();
    }
    io_.stop();
}

Status Server::prepare() {
    auto ep = parse_endpoint(options_.comm);
    if (!ep) return ep.error();
    if (options_.save_dir) {
        auto dir = usable_save_dir(*options_.save_dir);
        if (!dir) return dir.error();
        options_.save_dir = *dir;
    }
    if (options_.hostio_dir) {
        struct stat st {};
        if (stat(options_.hostio_dir->c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
            return make_error(ErrorCode::NotFound,
                              fmt::format("--hostio-dir {}: {}", *options_.hostio_dir,
                                          std::strerror(errno ? errno : ENOTDIR)));
        options_.hostio_dir = std::filesystem::absolute(*options_.hostio_dir).lexically_normal();
    }
    AddressFilter allowed;
    for (const auto& list : options_.allow)
        if (auto a = allowed.add(list); !a) return a; // checked when parsed: not expected
    if (options_.record_host) {
        auto where = parse_endpoint(*options_.record_host);
        if (!where) return where.error();
        record_stream_ =
            std::make_shared<RecordStream>(io_, *where, allowed, options_.record_backlog_bytes);
        if (auto s = record_stream_->open(); !s) return s;
    }
    listener_ = std::make_unique<Listener>(io_, *ep, options_.baud, std::move(allowed));
    return listener_->open();
}

Status Server::start_first_program() {
    if (options_.attach_pid) return attach_to(*options_.attach_pid);
    if (!options_.program.empty()) return start_program(options_.program);
    return ok_status();
}

int Server::run() {
    // The command line is checked, and the port bound, before a program exists: a mistake ends
    // tpagent with nothing started and left behind.
    if (auto s = prepare(); !s) {
        fmt::print(stderr, "{}\nExiting\n", s.error().text);
        return 1;
    }
    if (auto s = start_first_program(); !s) {
        fmt::print(stderr, "{}\nExiting\n", s.error().text);
        listener_->close();
        return 1;
    }
    listener_->announce_first();
    if (record_stream_) record_stream_->announce();
    wait_for_children();
    accept_next();
    // An exception out of an event handler must not end tpagent (the program would die with
    // it): it is logged and the loop goes on. Packet handlers answer theirs as E.text.
    while (true) {
        try {
            io_.run();
            break;
        } catch (const std::exception& e) {
            spdlog::error("internal error, serving on: {}", e.what());
        }
    }
    return exit_status_;
}

} // namespace tpagent::server
