#include "server/transport.hpp"
#include "protocol/framing.hpp"
#include <array>
#include <chrono>
#include <memory>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <optional>
#include <spdlog/spdlog.h>
#include <unistd.h>

namespace tpagent::server {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// Reads one stream and writes another, or the same one (a socket, a tty: `out_` empty).
template <typename Stream> class StreamConnection : public Connection {
  public:
    explicit StreamConnection(Stream s) : in_(std::move(s)) {}
    StreamConnection(Stream in, Stream out) : in_(std::move(in)), out_(std::move(out)) {}
    void async_read(std::span<std::uint8_t> buf, ReadHandler handler) override {
        in_.async_read_some(asio::buffer(buf.data(), buf.size()), std::move(handler));
    }
    bool write(std::string_view data) override {
        error_code ec;
        asio::write(out_ ? *out_ : in_, asio::buffer(data.data(), data.size()), ec);
        return !ec;
    }
    void close() override {
        error_code ec;
        in_.close(ec);
        if (out_) out_->close(ec);
    }

  protected:
    Stream in_;
    std::optional<Stream> out_;
};

class TcpConnection : public StreamConnection<asio::ip::tcp::socket> {
  public:
    using StreamConnection::StreamConnection;
    void close() override {
        error_code ec;
        in_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
        in_.close(ec);
    }
};

class StdioConnection : public StreamConnection<asio::posix::stream_descriptor> {
  public:
    explicit StdioConnection(asio::io_context& io)
        : StreamConnection(asio::posix::stream_descriptor(io, dup(0)),
                           asio::posix::stream_descriptor(io, dup(1))) {}
    bool is_stdio() const override { return true; }
};

} // namespace

namespace {
// A gdb whose host vanished (a cable pulled, the host powered off or frozen) sends no FIN or RST:
// without a probe the session would wait for it forever, the program stopped for it and, with
// disconnected tracing on, its trace out of any other gdb's reach. Keepalive probes after 10 s
// of silence, 3 of them 5 s apart, and a 25 s bound on data left unacknowledged (TCP_USER_TIMEOUT)
// make that a disconnect within about 25 s. A live gdb's system answers the probes, however long
// gdb itself stays silent, stopped or not. (gdbserver sets SO_KEEPALIVE with the system's timing:
// two hours by default.)
constexpr int kKeepIdleSeconds = 10;
constexpr int kKeepIntervalSeconds = 5;
constexpr int kKeepProbes = 3;
constexpr unsigned kUserTimeoutMs = 25000;
} // namespace

void detect_vanished_peer(asio::ip::tcp::socket& socket) {
    error_code ec;
    socket.set_option(asio::socket_base::keep_alive(true), ec);
    const int fd = socket.native_handle();
    auto set = [fd](int option, auto value) {
        if (setsockopt(fd, IPPROTO_TCP, option, &value, sizeof value) != 0)
            spdlog::warn("TCP option {} on a connection: {}", option, std::strerror(errno));
    };
    set(TCP_KEEPIDLE, kKeepIdleSeconds);
    set(TCP_KEEPINTVL, kKeepIntervalSeconds);
    set(TCP_KEEPCNT, kKeepProbes);
    set(TCP_USER_TIMEOUT, kUserTimeoutMs);
}

void close_on_exec(int fd) {
    if (const int flags = fcntl(fd, F_GETFD); flags >= 0) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// A port is decimal digits, 0 to 65535 (gdbserver would take 99999 as 99999 % 65536).
std::optional<unsigned short> parse_port(std::string_view text) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > 65535)
        return std::nullopt;
    return static_cast<unsigned short>(value);
}

// A host name, resolved as gdbserver does, and its failure in gdbserver's words.
Result<asio::ip::address> resolve_host(const Endpoint& ep) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = getaddrinfo(ep.host.c_str(), nullptr, &hints, &found); rc != 0)
        return make_error(ErrorCode::SystemError,
                          fmt::format("{}: cannot resolve name: {}", ep.spec, gai_strerror(rc)));
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, freeaddrinfo);
    asio::ip::tcp::endpoint endpoint;
    std::memcpy(endpoint.data(), found->ai_addr, found->ai_addrlen);
    endpoint.resize(found->ai_addrlen);
    return endpoint.address();
}

Result<Endpoint> parse_endpoint(const std::string& comm) {
    Endpoint ep;
    ep.spec = comm;
    if (comm == "-") {
        ep.kind = Endpoint::Kind::Stdio;
        return ep;
    }
    std::size_t colon = comm.rfind(':');
    if (colon == std::string::npos || comm.find('/') != std::string::npos) {
        ep.kind = Endpoint::Kind::Serial;
        ep.device = comm;
        return ep;
    }
    std::string host = comm.substr(0, colon);
    std::string port = comm.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    // ":PORT" and "localhost:PORT" stay on this machine; other hosts must be named.
    if (host.empty() || host == "localhost") host = "127.0.0.1";
    auto number = parse_port(port);
    if (!number)
        return make_error(
            ErrorCode::BadPacket,
            port.empty() ? fmt::format("{}: no port number after ':'", comm)
                         : fmt::format("{}: invalid port number '{}' (0 to 65535)", comm, port));
    ep.kind = Endpoint::Kind::Tcp;
    ep.host = host;
    ep.port = *number;
    return ep;
}

Status Listener::open() {
    switch (ep_.kind) {
    case Endpoint::Kind::Tcp:
        return bind_tcp();
    case Endpoint::Kind::Serial: {
        auto port = open_serial();
        if (!port) return port.error();
        serial_ = std::move(*port);
        return ok_status();
    }
    case Endpoint::Kind::Stdio:
        break;
    }
    return ok_status();
}

Result<std::unique_ptr<asio::ip::tcp::acceptor>> listen_tcp(asio::io_context& io,
                                                            const Endpoint& ep) {
    error_code ec;
    auto addr = asio::ip::make_address(ep.host, ec);
    if (ec) {
        auto resolved = resolve_host(ep);
        if (!resolved) return resolved.error();
        addr = *resolved;
    }
    const asio::ip::tcp::endpoint endpoint(addr, ep.port);
    auto acceptor = std::make_unique<asio::ip::tcp::acceptor>(io);
    acceptor->open(endpoint.protocol(), ec);
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(endpoint, ec);
    if (!ec) acceptor->listen(1, ec);
    if (ec) // gdbserver's words
        return make_error(ErrorCode::SystemError, "Can't bind address: " + ec.message() + ".");
    close_on_exec(acceptor->native_handle());
    return acceptor;
}

Status Listener::bind_tcp() {
    auto acceptor = listen_tcp(io_, ep_);
    if (!acceptor) return acceptor.error();
    acceptor_ = std::move(*acceptor);
    return ok_status();
}

// gdbserver says "Could not open remote device" (with the wrong reason: it reports EINVAL
// for a missing device); the device and the real reason help more.
Result<std::unique_ptr<asio::serial_port>> Listener::open_serial() const {
    auto port = std::make_unique<asio::serial_port>(io_);
    error_code ec;
    port->open(ep_.device, ec);
    if (ec)
        return make_error(
            ErrorCode::SystemError,
            fmt::format("Could not open remote device {}: {}.", ep_.device, ec.message()));
    if (baud_ != 0) port->set_option(asio::serial_port::baud_rate(baud_), ec);
    if (ec)
        return make_error(ErrorCode::SystemError,
                          fmt::format("Could not set the speed of {} to {} baud: {}.", ep_.device,
                                      baud_, ec.message()));
    return port;
}

void Listener::announce() const {
    if (!acceptor_) return;
    error_code ec;
    fmt::print(stderr, "Listening on port {}\n", acceptor_->local_endpoint(ec).port());
    std::fflush(stderr);
}

void Listener::announce_first() const {
    announce();
    if (acceptor_ && (ep_.host == "127.0.0.1" || ep_.host == "::1")) {
        error_code ec;
        fmt::print(
            stderr,
            "(accepting connections from this machine only; use 0.0.0.0:{} to accept others)\n",
            acceptor_->local_endpoint(ec).port());
        std::fflush(stderr);
    }
}

void Listener::async_accept(const AcceptHandler& handler) {
    switch (ep_.kind) {
    case Endpoint::Kind::Stdio:
        asio::post(io_, [this, handler] {
            fmt::print(stderr, "Remote debugging using stdio\n"); // gdbserver's line
            std::fflush(stderr);
            handler(std::make_unique<StdioConnection>(io_));
        });
        return;
    case Endpoint::Kind::Serial:
        asio::post(io_, [this, handler] {
            // The device open() opened first; a later session opens it again.
            std::unique_ptr<asio::serial_port> port = std::move(serial_);
            if (!port) {
                auto reopened = open_serial();
                if (!reopened) {
                    fmt::print(stderr, "Remote communication error: {}\n", reopened.error().text);
                    handler(nullptr);
                    return;
                }
                port = std::move(*reopened);
            }
            fmt::print(stderr, "Remote debugging using {}\n", ep_.device);
            std::fflush(stderr);
            handler(std::make_unique<StreamConnection<asio::serial_port>>(std::move(*port)));
        });
        return;
    case Endpoint::Kind::Tcp:
        handler_ = handler;
        serving_.clear();
        if (!accepting_) accept_tcp();
        return;
    }
}

void Listener::accept_tcp() {
    accepting_ = true;
    acceptor_->async_accept([this](const error_code& ec, asio::ip::tcp::socket socket) {
        accepting_ = false;
        if (ec) {
            // Closed (tpagent ending) or failed: only a wait for a session needs to know.
            if (serving_.empty() && ec != asio::error::operation_aborted) handler_(nullptr);
            return;
        }
        error_code e2;
        auto remote = socket.remote_endpoint(e2);
        const std::string from =
            e2 ? "host ?, port 0"
               : fmt::format("host {}, port {}", remote.address().to_string(), remote.port());
        if (!allowed_.empty() && (e2 || !allowed_.allows(remote.address()))) {
            // Not a session: closed at once, and the port listens on.
            fmt::print(stderr, "Refused a connection from {}: not in --allow\n", from);
            std::fflush(stderr);
            socket.close(e2);
        } else if (!serving_.empty()) {
            turn_away(std::move(socket), from);
        } else {
            socket.set_option(asio::ip::tcp::no_delay(true), e2);
            close_on_exec(socket.native_handle());
            detect_vanished_peer(socket);
            fmt::print(stderr, "Remote debugging from {}\n", from);
            std::fflush(stderr);
            serving_ = from;
            handler_(std::make_unique<TcpConnection>(std::move(socket)));
        }
        if (acceptor_ && acceptor_->is_open()) accept_tcp();
    });
}

// A second gdb: its first packet (qSupported) is acknowledged and answered with an error that
// gdb prints ("Remote failure reply: E.tpagent is serving another gdb ..."); then tpagent stops
// writing and reads on until gdb gives up or a few seconds pass. Answering before the packet is
// whole, or closing while gdb still writes, resets the connection, and gdb would show only
// "Broken pipe".
namespace {
class Refusal : public std::enable_shared_from_this<Refusal> {
  public:
    Refusal(asio::ip::tcp::socket socket, std::string reply)
        : socket_(std::move(socket)), timer_(socket_.get_executor()), reply_(std::move(reply)) {}
    void start() {
        timer_.expires_after(std::chrono::seconds(5));
        timer_.async_wait([self = shared_from_this()](const error_code&) {
            error_code ignored;
            self->socket_.close(ignored);
        });
        read();
    }

  private:
    void read() {
        socket_.async_read_some(asio::buffer(buffer_),
                                [self = shared_from_this()](const error_code& ec, std::size_t n) {
                                    self->on_read(ec, n);
                                });
    }
    void on_read(const error_code& ec, std::size_t n) {
        error_code ignored;
        if (ec) { // gdb gave up, or the timer closed the socket
            socket_.close(ignored);
            timer_.cancel();
            return;
        }
        if (!answered_) {
            seen_.append(buffer_.data(), std::min(n, kMaxSeen - std::min(kMaxSeen, seen_.size())));
            const auto hash = seen_.find('#');
            if (hash != std::string::npos && seen_.size() >= hash + 3) {
                asio::write(socket_, asio::buffer(reply_), ignored);
                socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
                answered_ = true;
            }
        }
        read();
    }

    static constexpr std::size_t kMaxSeen = 4096;
    asio::ip::tcp::socket socket_;
    asio::steady_timer timer_;
    std::array<char, 512> buffer_{};
    std::string seen_;
    std::string reply_;
    bool answered_ = false;
};
} // namespace

void Listener::turn_away(asio::ip::tcp::socket socket, const std::string& from) {
    fmt::print(stderr, "Refused a connection from {}: tpagent is serving another gdb ({})\n", from,
               serving_);
    std::fflush(stderr);
    std::make_shared<Refusal>(std::move(socket),
                              "+" + protocol::frame_packet(fmt::format(
                                        "E.tpagent is serving another gdb ({})", serving_)))
        ->start();
}

void Listener::close() {
    if (acceptor_) {
        error_code ec;
        acceptor_->close(ec);
    }
    serial_.reset();
}

} // namespace tpagent::server
