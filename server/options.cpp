#include "server/options.hpp"
#include "server/address_filter.hpp"
#include "server/transport.hpp"
#include "protocol/hex.hpp"
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <iterator>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace tpagent::server {

namespace {
Error usage_error(std::string text) {
    return make_error(ErrorCode::BadPacket, std::move(text));
}

// The options that only set a flag.
struct Switch {
    std::string_view name;
    bool ServerOptions::*flag;
    bool value;
};
constexpr Switch kSwitches[] = {
    {"--help", &ServerOptions::show_help, true},
    {"--version", &ServerOptions::show_version, true},
    {"--multi", &ServerOptions::multi, true},
    {"--once", &ServerOptions::once, true},
    {"--relocate-with-gdb", &ServerOptions::relocate_with_gdb, true},
    {"--no-inject", &ServerOptions::inject, false},
    {"--trace-follow-fork", &ServerOptions::trace_follow_fork, true},
    {"--disable-randomization", &ServerOptions::disable_randomization, true},
    {"--no-disable-randomization", &ServerOptions::disable_randomization, false},
};

bool parse_number(std::string_view s, long& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

} // namespace

// N, NK, NM or NG (powers of 1024), at most 1 TiB.
std::optional<std::uint64_t> parse_byte_size(std::string_view s) {
    unsigned shift = 0;
    if (!s.empty()) {
        const char unit = s.back();
        shift = unit == 'K' || unit == 'k'   ? 10
                : unit == 'M' || unit == 'm' ? 20
                : unit == 'G' || unit == 'g' ? 30
                                             : 0;
        if (shift) s.remove_suffix(1);
    }
    long n = 0;
    if (!parse_number(s, n) || n <= 0 ||
        static_cast<std::uint64_t>(n) > (std::uint64_t{1} << 40) >> shift)
        return std::nullopt;
    return static_cast<std::uint64_t>(n) << shift;
}

std::optional<std::uint32_t> parse_duration(std::string_view s) {
    std::uint32_t unit = 1;
    if (!s.empty()) {
        const char c = s.back();
        unit = c == 'm' ? 60 : c == 'h' ? 3600 : 1;
        if (c == 's' || c == 'm' || c == 'h') s.remove_suffix(1);
    }
    long n = 0;
    if (!parse_number(s, n) || n < 0 || static_cast<std::uint64_t>(n) * unit > 366u * 86400)
        return std::nullopt;
    return static_cast<std::uint32_t>(n) * unit;
}

std::string usage_text() {
    // The `or:` lines are how help2man (the man page) recognises further synopses.
    return "Usage: tpagent [OPTIONS] COMM PROG [ARGS ...]\n"
           "  or:  tpagent [OPTIONS] --attach COMM PID\n"
           "  or:  tpagent [OPTIONS] --multi COMM\n"
           "\n"
           "COMM may either be a tty device (for serial debugging),\n"
           "HOST:PORT to listen for a TCP connection (:PORT listens on 127.0.0.1 only;\n"
           "use 0.0.0.0:PORT or [::]:PORT to accept remote hosts), or '-' or 'stdio'\n"
           "to use stdin/stdout of tpagent.\n"
           "PROG is the executable program.  ARGS are arguments passed to inferior.\n"
           "PID is the process ID to attach to, when --attach is specified.\n"
           "\n"
           "Operating modes:\n"
           "  --attach              Attach to running process PID.\n"
           "  --multi               Start server without a specific program, and\n"
           "                        only quit when explicitly commanded.\n"
           "  --once                Exit after the first connection has closed (one that\n"
           "                        leaves a disconnected trace running does not count).\n"
           "  --help                Print this message and then exit.\n"
           "  --version             Display version information and exit.\n"
           "\n"
           "Other options:\n"
           "  --wrapper WRAPPER --  Run WRAPPER to start new programs.\n"
           "  --inproc[=LIB]        Preload the in-process agent (fast tracepoints) into\n"
           "                        programs tpagent starts; LIB defaults to\n"
           "                        libtpagent-inproc.so next to tpagent, else the\n"
           "                        one installed with it (lib/tpagent/).\n"
           "  --no-inject           Never load the in-process agent into a program that\n"
           "                        runs without it (by default, the first fast\n"
           "                        tracepoint in such a program, e.g. one attached to,\n"
           "                        loads it with the program's own dlopen).\n"
           "  --trace-follow-fork   Children a program forks during a trace run are traced\n"
           "                        too: they keep its fast and static tracepoints, and\n"
           "                        their frames go into the same trace ($trace_pid says\n"
           "                        whose); as `monitor set trace-follow-fork on`.\n"
           "  --relocate-with-gdb   Have gdb relocate the instructions fast tracepoints\n"
           "                        displace (qRelocInsn), when gdb supports it.\n"
           "  --baud N              Line speed for a serial tty COMM.\n"
           "  --hostio-dir DIR      gdb's file requests (vFile) see DIR as the root: no file\n"
           "                        outside it can be read or written.\n"
           "  --allow LIST          Accept TCP connections only from these hosts: a comma-\n"
           "                        separated list of addresses and ADDRESS/PREFIX networks\n"
           "                        (IPv4 or IPv6); may be repeated. Others are refused.\n"
           "  --save-dir DIR        Trace files saved on the target (tsave -r) go only in DIR;\n"
           "                        so does the trace of a program that ends during a\n"
           "                        disconnected trace (DIR/tpagent-PID-DATE-TIME.tf).\n"
           "  --record DIR          Record every trace run into rotating trace files in DIR\n"
           "                        (DIR/trace-NNNNNN.tf, each one whole for target tfile).\n"
           "  --record-host [ADDR:]PORT\n"
           "                        Record every trace run to a host instead: the same files,\n"
           "                        made there by `tpdump record BOARD:PORT DIR`, which may\n"
           "                        connect, leave and come back (no gap). Listens on\n"
           "                        127.0.0.1 unless ADDR says otherwise; --allow applies.\n"
           "  --record-backlog N[K|M|G]\n"
           "                        What the board holds for a host that is away (32M); past\n"
           "                        it, frames wait in the trace buffer.\n"
           "  --record-size N[K|M|G]\n"
           "                        Begin a new file once one holds N bytes (64M).\n"
           "  --record-files N      Keep only the newest N files (all).\n"
           "  --record-interval N[s|m|h]\n"
           "                        Also begin a new file once one has been written for\n"
           "                        that long (never).\n"
           "  --record-min-free N[K|M|G]\n"
           "                        Write no frame while DIR's disk has less free space\n"
           "                        (a twentieth of its size); those frames are counted.\n"
           "                        Snapshots keep the same free space.\n"
           "  --snapshot-dir DIR    Where snapshots of the trace buffer go (monitor snapshot,\n"
           "                        SIGUSR1 to tpagent, or a trigger tracepoint):\n"
           "                        DIR/snapshot-NNNNNN.tf, each one whole for target tfile.\n"
           "  --snapshot-files N    Keep only the newest N snapshots (all).\n"
           "  --disable-randomization\n"
           "                        Run PROG with address space randomization disabled (default).\n"
           "  --no-disable-randomization\n"
           "                        Don't disable address space randomization.\n"
           "\n"
           "Debug options:\n"
           "  --debug               Log every packet and ptrace event to stderr.\n"
           "  --remote-debug        Log every packet to stderr.\n"
           "  --disable-packet=OPT1[,OPT2,...]\n"
           "                        Disable support for RSP packets or features (as gdb's\n"
           "                        testsuite does to check gdb without them).\n"
           "                          Options:\n"
           "                            vCont, Tthread, qC, qfThreadInfo and\n"
           "                            threads (disable all of the above), T (disable\n"
           "                            all T stop replies); --disable-packet alone lists them.\n"
           "  --debug-format=OPT1[,OPT2,...]\n"
           "                        What each line of debug output starts with.\n"
           "                          Options:\n"
           "                            all, timestamp  the time (the default)\n"
           "                            none            nothing\n";
}

namespace {
// The packets --disable-packet=LIST names, as gdbserver takes them.
Status disable_packets(std::string_view list, DisabledPackets& off) {
    for (std::string_view name : protocol::split(list, ',')) {
        if (name == "vCont")
            off.vcont = true;
        else if (name == "Tthread")
            off.stop_thread = true;
        else if (name == "qC")
            off.current_thread = true;
        else if (name == "qfThreadInfo")
            off.thread_list = true;
        else if (name == "T")
            off.stop_registers = true;
        else if (name == "threads")
            off.vcont = off.stop_thread = off.current_thread = off.thread_list = true;
        else
            return usage_error(fmt::format(
                "don't know how to disable \"{}\" (--disable-packet lists what it can)", name));
    }
    return ok_status();
}

// The options from argv[i] on, up to the first word that is not one (COMM, PROG or PID):
// its index, or the usage error.
Result<int> parse_switches(int argc, char** argv, int i, ServerOptions& o) {
    for (; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a.size() < 2 || a.substr(0, 2) != "--") return i;
        if (a == "--") return i + 1;
        const auto* sw = std::find_if(std::begin(kSwitches), std::end(kSwitches),
                                      [&](const Switch& w) { return w.name == a; });
        if (sw != std::end(kSwitches))
            o.*(sw->flag) = sw->value;
        else if (a == "--debug" || a.starts_with("--debug="))
            o.debug = true;
        else if (a == "--remote-debug")
            o.remote_debug = true;
        else if (a.starts_with("--debug-format=")) {
            for (std::string_view f : protocol::split(a.substr(15), ',')) {
                if (f != "all" && f != "none" && f != "timestamp")
                    return usage_error(fmt::format("unknown --debug-format option \"{}\"", f));
                o.debug_timestamps = f != "none";
            }
        } else if (a == "--attach")
            o.attach_pid = 0; // PID comes after COMM
        else if (a == "--disable-packet")
            o.show_disableable = true;
        else if (a.starts_with("--disable-packet=")) {
            if (auto d = disable_packets(a.substr(17), o.disabled); !d) return d.error();
        } else if (a == "--baud" || a.starts_with("--baud=")) {
            std::string_view v = a == "--baud" ? (i + 1 < argc ? argv[++i] : "") : a.substr(7);
            long n = 0;
            if (!parse_number(v, n) || n <= 0) return usage_error("--baud needs a positive number");
            o.baud = static_cast<unsigned>(n);
        } else if (a == "--save-dir" || a.starts_with("--save-dir=")) {
            std::string_view v = a == "--save-dir" ? (i + 1 < argc ? argv[++i] : "") : a.substr(11);
            if (v.empty()) return usage_error("--save-dir needs a directory");
            o.save_dir = std::string(v);
        } else if (a == "--record" || a.starts_with("--record=")) {
            std::string_view v = a == "--record" ? (i + 1 < argc ? argv[++i] : "") : a.substr(9);
            if (v.empty()) return usage_error("--record needs a directory");
            o.record_dir = std::string(v);
        } else if (a == "--record-host" || a.starts_with("--record-host=")) {
            std::string_view v =
                a == "--record-host" ? (i + 1 < argc ? argv[++i] : "") : a.substr(14);
            const std::string spec =
                v.find(':') == std::string_view::npos ? ":" + std::string(v) : std::string(v);
            auto ep = parse_endpoint(spec);
            if (v.empty() || !ep || ep->kind != Endpoint::Kind::Tcp)
                return usage_error("--record-host needs [ADDRESS:]PORT");
            o.record_host = spec;
        } else if (a == "--record-backlog" || a.starts_with("--record-backlog=")) {
            std::string_view v =
                a == "--record-backlog" ? (i + 1 < argc ? argv[++i] : "") : a.substr(17);
            auto bytes = parse_byte_size(v);
            if (!bytes || *bytes < (1u << 20))
                return usage_error("--record-backlog needs a size of 1M or more (N[K|M|G])");
            o.record_backlog_bytes = *bytes;
        } else if (a == "--record-size" || a.starts_with("--record-size=")) {
            std::string_view v =
                a == "--record-size" ? (i + 1 < argc ? argv[++i] : "") : a.substr(14);
            auto bytes = parse_byte_size(v);
            if (!bytes || *bytes < 4096)
                return usage_error("--record-size needs a size of 4K or more (N[K|M|G])");
            o.record_file_bytes = *bytes;
        } else if (a == "--record-files" || a.starts_with("--record-files=")) {
            std::string_view v =
                a == "--record-files" ? (i + 1 < argc ? argv[++i] : "") : a.substr(15);
            long n = 0;
            if (!parse_number(v, n) || n <= 0 || n > 1000000)
                return usage_error("--record-files needs a positive number");
            o.record_files = static_cast<std::uint32_t>(n);
        } else if (a == "--record-interval" || a.starts_with("--record-interval=")) {
            std::string_view v =
                a == "--record-interval" ? (i + 1 < argc ? argv[++i] : "") : a.substr(18);
            auto seconds = parse_duration(v);
            if (!seconds || *seconds == 0)
                return usage_error("--record-interval needs a time (N[s|m|h], 1 s or more)");
            o.record_seconds = *seconds;
        } else if (a == "--record-min-free" || a.starts_with("--record-min-free=")) {
            std::string_view v =
                a == "--record-min-free" ? (i + 1 < argc ? argv[++i] : "") : a.substr(18);
            auto bytes = parse_byte_size(v);
            if (!bytes) return usage_error("--record-min-free needs a size (N[K|M|G])");
            o.record_min_free = *bytes;
        } else if (a == "--snapshot-dir" || a.starts_with("--snapshot-dir=")) {
            std::string_view v =
                a == "--snapshot-dir" ? (i + 1 < argc ? argv[++i] : "") : a.substr(15);
            if (v.empty()) return usage_error("--snapshot-dir needs a directory");
            o.snapshot_dir = std::string(v);
        } else if (a == "--snapshot-files" || a.starts_with("--snapshot-files=")) {
            std::string_view v =
                a == "--snapshot-files" ? (i + 1 < argc ? argv[++i] : "") : a.substr(17);
            long n = 0;
            if (!parse_number(v, n) || n <= 0 || n > 1000000)
                return usage_error("--snapshot-files needs a positive number");
            o.snapshot_files = static_cast<std::uint32_t>(n);
        } else if (a == "--hostio-dir" || a.starts_with("--hostio-dir=")) {
            std::string_view v =
                a == "--hostio-dir" ? (i + 1 < argc ? argv[++i] : "") : a.substr(13);
            if (v.empty()) return usage_error("--hostio-dir needs a directory");
            o.hostio_dir = std::string(v);
        } else if (a == "--allow" || a.starts_with("--allow=")) {
            std::string_view v = a == "--allow" ? (i + 1 < argc ? argv[++i] : "") : a.substr(8);
            if (v.empty()) return usage_error("--allow needs ADDRESS[/PREFIX][,...]");
            AddressFilter check;
            if (auto s = check.add(v); !s) return usage_error(s.error().text);
            o.allow.emplace_back(v);
        } else if (a == "--inproc" || a.starts_with("--inproc=")) {
            o.inproc = std::string(a == "--inproc" ? "" : a.substr(9));
        } else if (a == "--wrapper") {
            for (++i; i < argc && std::strcmp(argv[i], "--") != 0; ++i)
                o.wrapper.emplace_back(argv[i]);
            if (i >= argc || o.wrapper.empty())
                return usage_error("--wrapper needs WRAPPER ARGS... --");
        } else {
            return usage_error("unknown option: " + std::string(a));
        }
    }
    return i;
}
} // namespace

Result<ServerOptions> parse_options(int argc, char** argv) {
    ServerOptions o;
    auto at = parse_switches(argc, argv, 1, o);
    if (!at) return at.error();
    int i = *at;
    if (o.show_help || o.show_version || o.show_disableable) return o;
    if (o.record_dir && o.record_host)
        return usage_error("--record DIR and --record-host PORT: one or the other");
    if (i >= argc) return usage_error("missing COMM");
    o.comm = argv[i++];
    if (o.comm == "stdio") o.comm = "-";
    // Options after COMM (`COMM --attach PID`, as gdbserver's testsuite writes it).
    if (i < argc && std::string_view(argv[i]).starts_with("--")) {
        at = parse_switches(argc, argv, i, o);
        if (!at) return at.error();
        i = *at;
        if (o.record_dir && o.record_host)
            return usage_error("--record DIR and --record-host PORT: one or the other");
    }
    if (o.attach_pid) {
        long pid = 0;
        if (i >= argc) return usage_error("--attach needs a PID after COMM");
        if (!parse_number(argv[i], pid) || pid <= 0)
            return usage_error(fmt::format("--attach: \"{}\" is not a process ID", argv[i]));
        o.attach_pid = static_cast<pid_t>(pid);
        if (++i != argc) return usage_error("unexpected arguments after PID");
        return o;
    }
    for (; i < argc; ++i)
        o.program.emplace_back(argv[i]);
    if (o.program.empty() && !o.multi)
        return usage_error("no program to debug (PROG, --attach or --multi)");
    return o;
}

std::string disableable_text() {
    return "Disableable packets:\n"
           "  vCont       \tAll vCont packets\n"
           "  qC          \tQuerying the current thread\n"
           "  qfThreadInfo\tThread listing\n"
           "  Tthread     \tPassing the thread specifier in the T stop reply packet\n"
           "  threads     \tAll of the above\n"
           "  T           \tAll 'T' packets\n";
}

bool DisabledPackets::refuses(std::string_view name) const {
    return (vcont && (name == "vCont" || name == "vCont?")) || (current_thread && name == "qC") ||
           (thread_list && (name == "qfThreadInfo" || name == "qsThreadInfo"));
}

Result<std::string> usable_save_dir(const std::string& dir) {
    auto refuse = [&](int error) {
        return make_error(ErrorCode::NotFound,
                          fmt::format("--save-dir {}: {}", dir, std::strerror(error)));
    };
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) return refuse(errno);
    if (!S_ISDIR(st.st_mode)) return refuse(ENOTDIR);
    if (access(dir.c_str(), W_OK | X_OK) != 0) return refuse(errno);
    std::filesystem::path path = std::filesystem::absolute(dir).lexically_normal();
    if (!path.has_filename() && path.has_relative_path()) path = path.parent_path(); // "d/"
    return path.string();
}

} // namespace tpagent::server
