// See record_host.hpp.
#include "tools/tpdump/record_host.hpp"
#include "base/dir_sync.hpp"
#include "tools/tracefile/trace_folder.hpp"
#include "trace/record_stream_wire.hpp"
#include "trace/trace_file_seal.hpp"
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tpagent::tpdump {

namespace {

constexpr const char* kUsage =
    "Usage: tpdump record [HOST:]PORT DIR\n"
    "The host end of a recording streamed by tpagent --record-host PORT on a board: its files\n"
    "(DIR/trace-NNNNNN.tf, rotated as the board rotates them) made in DIR. Connects again\n"
    "after a link cut, and the stream goes on from where it was; so does a tpdump record\n"
    "started again on the same DIR. Runs until interrupted.\n";
constexpr const char* kStateFile = ".tpdump-record";
// An acknowledgement at least this often while operations keep coming.
constexpr std::uint64_t kAckBytes = 1u << 20;

// Set by a signal handler, read by the receiving and the following threads.
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);
void on_stop_signal(int) {
    g_stop = true;
}

std::FILE* g_messages = stdout;
void say(const std::string& line) {
    fmt::print(g_messages, "tpdump record: {}\n", line);
    std::fflush(g_messages);
}

// What DIR holds of a stream, kept across runs of tpdump record.
struct StreamState {
    std::uint64_t stream = 0;  // 0: none yet
    std::uint64_t applied = 0; // the last operation kept
    std::uint64_t base = 0;    // board file N is DIR/trace-(base+N).tf
};

StreamState load_state(const std::string& dir) {
    StreamState s;
    std::ifstream in(dir + "/" + kStateFile);
    std::string w1, w2, w3;
    std::uint64_t stream = 0, applied = 0, base = 0;
    if (in >> w1 >> std::hex >> stream >> w2 >> std::dec >> applied >> w3 >> base &&
        w1 == "stream" && w2 == "applied" && w3 == "base")
        s = {stream, applied, base};
    return s;
}

// Written beside and renamed into place: a kill -9 leaves the old state or the new one.
bool save_state(const std::string& dir, const StreamState& s) {
    const std::string path = dir + "/" + kStateFile, temp = path + ".new";
    {
        std::ofstream out(temp, std::ios::trunc);
        out << fmt::format("stream {:x} applied {} base {}\n", s.stream, s.applied, s.base);
        if (!out.flush()) return false;
    }
    return std::rename(temp.c_str(), path.c_str()) == 0;
}

Status keep_state(const std::string& dir, const StreamState& s) {
    if (save_state(dir, s)) return ok_status();
    return make_error(ErrorCode::SystemError, fmt::format("cannot write {}/{}", dir, kStateFile));
}

// A board that vanished (powered off, a NAT entry gone) sends no FIN or RST: probes after 10 s
// of silence, 3 of them 5 s apart, and a 25 s bound on unacknowledged data find it gone, as
// tpagent finds a host gone.
void detect_vanished_board(int fd) {
    const int on = 1, idle = 10, interval = 5, probes = 3;
    const unsigned user_timeout_ms = 25000;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

// connect(), waited for in steps so that a stop is seen (SYNs dropped take minutes to fail).
int connect_interruptibly(int fd, const sockaddr* address, socklen_t length) {
    const int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int error = connect(fd, address, length) == 0 ? 0 : errno;
    while (error == EINPROGRESS || error == EINTR) {
        if (g_stop) return EINTR;
        pollfd p{fd, POLLOUT, 0};
        if (poll(&p, 1, 200) <= 0) continue;
        socklen_t size = sizeof error;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
    }
    fcntl(fd, F_SETFL, flags);
    return error;
}

// A connected socket, or why not.
Result<int> connect_to(const std::string& host, const std::string& port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0)
        return make_error(ErrorCode::SystemError,
                          fmt::format("{}:{}: {}", host, port, gai_strerror(rc)));
    int last_errno = ECONNREFUSED;
    for (addrinfo* a = found; a && !g_stop; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            last_errno = errno;
            continue;
        }
        last_errno = connect_interruptibly(fd, a->ai_addr, a->ai_addrlen);
        if (last_errno == 0) {
            freeaddrinfo(found);
            detect_vanished_board(fd);
            return fd;
        }
        close(fd);
    }
    freeaddrinfo(found);
    return make_error(ErrorCode::SystemError,
                      fmt::format("{}:{}: {}", host, port, std::strerror(last_errno)));
}

// All of `out`, or an Error (the link gone, or tpdump interrupted).
Status read_exact(int fd, std::span<std::uint8_t> out) {
    while (!out.empty()) {
        // A bounded wait, so that a stop asked in another thread is seen (--follow BOARD).
        pollfd p{fd, POLLIN, 0};
        if (const int ready = poll(&p, 1, 200); ready == 0 || (ready < 0 && errno == EINTR)) {
            if (g_stop) return make_error(ErrorCode::NotAllowed, "interrupted");
            continue;
        }
        const ssize_t n = recv(fd, out.data(), out.size(), 0);
        if (n < 0 && errno == EINTR && !g_stop) continue;
        if (n <= 0)
            return make_error(ErrorCode::SystemError, n == 0
                                                          ? std::string("the board closed the link")
                                                          : std::string(std::strerror(errno)));
        out = out.subspan(static_cast<std::size_t>(n));
    }
    return ok_status();
}

Status write_exact(int fd, std::span<const std::uint8_t> bytes) {
    while (!bytes.empty()) {
        const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR && !g_stop) continue;
        if (n <= 0) return make_error(ErrorCode::SystemError, std::strerror(errno));
        bytes = bytes.subspan(static_cast<std::size_t>(n));
    }
    return ok_status();
}

bool readable_now(int fd) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
}

// The files of a stream in DIR, as its operations make them.
class Folder {
  public:
    explicit Folder(std::string dir) : dir_(std::move(dir)) {}
    Folder(const Folder&) = delete;
    Folder& operator=(const Folder&) = delete;
    ~Folder() { close_file(); }

    Status apply(const trace::RecordOpHeader& op, std::span<const std::uint8_t> bytes,
                 std::uint64_t base);
    std::uint64_t skipped() const { return skipped_; }

  private:
    std::string path(std::uint64_t number) const {
        return tracefile::recorded_file_path(dir_, number);
    }
    void close_file() {
        if (fd_ >= 0) close(fd_);
        fd_ = -1;
    }
    std::string dir_;
    int fd_ = -1;
    std::uint64_t open_ = 0; // the number of the file fd_ is
    bool named_ = true;      // it has its name (it is not NAME.new still)
    std::uint64_t skipped_ = 0;
};

Status Folder::apply(const trace::RecordOpHeader& op, std::span<const std::uint8_t> bytes,
                     std::uint64_t base) {
    const std::uint64_t number = base + op.file;
    const std::string where = path(number), begun = where + ".new";
    auto fail = [&](const char* what) {
        return make_error(ErrorCode::SystemError,
                          fmt::format("cannot {} {}: {}", what, where, std::strerror(errno)));
    };
    switch (op.kind) {
    case trace::RecordOpKind::Create:
        // Under a name no reader takes until its first bytes (as tpagent's own folder does): a
        // board gone in between leaves no empty trace file.
        close_file();
        fd_ = open(begun.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd_ < 0) return fail("create");
        open_ = number;
        named_ = false;
        return ok_status();
    case trace::RecordOpKind::Write: {
        if (fd_ < 0 || open_ != number) {
            close_file();
            named_ = true;
            fd_ = open(where.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
            if (fd_ < 0 && errno == ENOENT) { // begun, then tpdump record stopped
                fd_ = open(begun.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
                named_ = false;
            }
            if (fd_ < 0 && errno == ENOENT) { // removed since, or begun before what we have
                ++skipped_;
                return ok_status();
            }
            if (fd_ < 0) return fail("open");
            open_ = number;
        }
        std::uint64_t offset = op.offset;
        for (auto left = bytes; !left.empty();) {
            const ssize_t n = pwrite(fd_, left.data(), left.size(), static_cast<off_t>(offset));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                if (n == 0) errno = ENOSPC;
                return fail("write");
            }
            left = left.subspan(static_cast<std::size_t>(n));
            offset += static_cast<std::uint64_t>(n);
        }
        if (!named_) {
            if (rename(begun.c_str(), where.c_str()) != 0) return fail("name");
            named_ = true;
        }
        return ok_status();
    }
    case trace::RecordOpKind::End: {
        if (fd_ >= 0 && open_ == number) {
            if (fsync(fd_) != 0) return fail("write");
            close_file();
        }
        sync_dir(dir_);
        struct stat st {};
        if (stat(where.c_str(), &st) == 0)
            say(fmt::format("{} ended: {} KiB", where, st.st_size >> 10));
        return ok_status();
    }
    case trace::RecordOpKind::Remove:
        if (fd_ >= 0 && open_ == number) close_file();
        unlink(begun.c_str());
        if (unlink(where.c_str()) != 0 && errno != ENOENT) return fail("remove");
        return ok_status();
    }
    return ok_status();
}

// A new stream goes on after the files in DIR; the newest, if a board's end cut it, is sealed.
StreamState begin_stream(const std::string& dir, std::uint64_t stream) {
    StreamState s{stream, 0, 0};
    auto files = tracefile::recorded_files(dir);
    if (files && !files->empty()) {
        s.base = tracefile::recorded_file_number(files->back()).value_or(0);
        if (auto sealed = trace::seal_trace_file(files->back()); sealed && !sealed->was_sealed)
            say(fmt::format("{} was cut short; sealed: {} whole frame(s) kept", files->back(),
                            sealed->frames));
    }
    return s;
}

// One connection: greeted, then operations applied until the link ends. Why it ended.
Error serve_link(int fd, const std::string& dir, StreamState& state, Folder& folder) {
    std::array<std::uint8_t, trace::kRecordHelloSize> hello_bytes{};
    if (auto s = read_exact(fd, hello_bytes); !s) return s.error();
    auto hello = trace::decode_hello(hello_bytes);
    if (!hello) return hello.error();
    if (hello->stream != state.stream) {
        state = begin_stream(dir, hello->stream);
        say(fmt::format("a new stream ({:x}): its files go on after trace-{:06}.tf", state.stream,
                        state.base));
    }
    if (hello->number > state.applied + 1) {
        say(fmt::format("operations {} to {} are no longer on the board (another host kept "
                        "them): files they made may be incomplete here",
                        state.applied + 1, hello->number - 1));
        state.applied = hello->number - 1;
    }
    // Kept on disk before it is said: the board forgets what the Resume names, and operations
    // applied on a link cut before their Ack are not in the state file yet.
    if (auto s = keep_state(dir, state); !s) return s.error();
    if (auto s = write_exact(fd, trace::encode_resume({state.stream, state.applied})); !s)
        return s.error();
    say(fmt::format("streaming from operation {}", state.applied + 1));
    std::vector<std::uint8_t> bytes;
    std::uint64_t unacked = 0;
    while (!g_stop) {
        std::array<std::uint8_t, trace::kRecordOpHeaderSize> header{};
        if (auto s = read_exact(fd, header); !s) return s.error();
        auto op = trace::decode_op_header(header);
        if (!op) return op.error();
        bytes.resize(op->length);
        if (auto s = read_exact(fd, bytes); !s) return s.error();
        if (op->seq != state.applied + 1)
            return make_error(ErrorCode::BadInput, fmt::format("operation {} where {} was due",
                                                               op->seq, state.applied + 1));
        if (auto s = folder.apply(*op, bytes, state.base); !s) return s.error();
        state.applied = op->seq;
        unacked += trace::kRecordOpHeaderSize + op->length;
        // Kept on disk first, then said: what the board forgets, DIR has.
        if (unacked >= kAckBytes || op->kind == trace::RecordOpKind::End || !readable_now(fd)) {
            if (auto s = keep_state(dir, state); !s) return s.error();
            if (auto s = write_exact(fd, trace::encode_ack(state.applied)); !s) return s.error();
            unacked = 0;
        }
    }
    save_state(dir, state);
    return make_error(ErrorCode::NotAllowed, "interrupted");
}

void sleep_a_while() {
    for (int i = 0; i < 5 && !g_stop; ++i)
        usleep(100 * 1000);
}

} // namespace

std::optional<BoardAddress> parse_board(const std::string& text) {
    const auto colon = text.rfind(':');
    BoardAddress board{colon == std::string::npos ? std::string() : text.substr(0, colon),
                       colon == std::string::npos ? text : text.substr(colon + 1)};
    if (board.port.empty() || board.port.size() > 5 ||
        board.port.find_first_not_of("0123456789") != std::string::npos)
        return std::nullopt;
    if (board.host.size() >= 2 && board.host.front() == '[' && board.host.back() == ']')
        board.host = board.host.substr(1, board.host.size() - 2);
    if (board.host.empty()) board.host = "localhost";
    return board;
}

void stop_on_signals() {
    struct sigaction stop {};
    stop.sa_handler = on_stop_signal; // no SA_RESTART: a blocked read returns
    sigaction(SIGINT, &stop, nullptr);
    sigaction(SIGTERM, &stop, nullptr);
}

bool stop_requested() {
    return g_stop;
}

void request_stop() {
    g_stop = true;
}

int record_from_board(const BoardAddress& board, const std::string& dir, std::FILE* messages) {
    g_messages = messages;
    if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
        say(fmt::format("cannot make {}: {}", dir, std::strerror(errno)));
        return 1;
    }
    StreamState state = load_state(dir);
    Folder folder(dir);
    bool said_waiting = false;
    while (!g_stop) {
        auto fd = connect_to(board.host, board.port);
        if (!fd) {
            if (!said_waiting) say(fmt::format("waiting for the board: {}", fd.error().text));
            said_waiting = true;
            sleep_a_while();
            continue;
        }
        said_waiting = false;
        say(fmt::format("connected to {}:{}", board.host, board.port));
        const Error why = serve_link(*fd, dir, state, folder);
        close(*fd);
        if (g_stop) break;
        say(fmt::format("link ended: {}; {} operation(s) kept so far; connecting again", why.text,
                        state.applied));
        sleep_a_while();
    }
    say(fmt::format(
        "stopped: {} operation(s) of stream {:x} kept in {}{}", state.applied, state.stream, dir,
        folder.skipped() ? fmt::format(" ({} write(s) to files not here skipped)", folder.skipped())
                         : std::string()));
    return 0;
}

int record_main(std::span<char* const> args) {
    if (args.size() == 1 &&
        (std::strcmp(args[0], "--help") == 0 || std::strcmp(args[0], "-h") == 0)) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    const auto board = args.size() == 2 ? parse_board(args[0]) : std::nullopt;
    if (!board) {
        fmt::print(stderr, "tpdump record: needs [HOST:]PORT DIR\n{}", kUsage);
        return 2;
    }
    stop_on_signals();
    return record_from_board(*board, args[1], stdout);
}

} // namespace tpagent::tpdump
