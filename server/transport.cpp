#include "server/transport.hpp"
#include <cstdio>
#include <fmt/format.h>
#include <optional>
#include <spdlog/spdlog.h>
#include <unistd.h>

namespace tpagent::agent {

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

Result<Endpoint> parse_endpoint(const std::string& comm) {
    Endpoint ep;
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
    char* end = nullptr;
    unsigned long p = std::strtoul(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p > 65535)
        return make_error(ErrorCode::BadPacket, "bad port number in " + comm);
    ep.kind = Endpoint::Kind::Tcp;
    ep.host = host;
    ep.port = static_cast<unsigned short>(p);
    return ep;
}

Status Listener::open() {
    if (ep_.kind != Endpoint::Kind::Tcp) return ok_status();
    error_code ec;
    auto addr = asio::ip::make_address(ep_.host, ec);
    if (ec) {
        // A host name: resolve it.
        asio::ip::tcp::resolver resolver(io_);
        auto results = resolver.resolve(ep_.host, std::to_string(ep_.port), ec);
        if (ec || results.empty())
            return make_error(ErrorCode::SystemError, "Can't resolve host " + ep_.host);
        addr = results.begin()->endpoint().address();
    }
    asio::ip::tcp::endpoint endpoint(addr, ep_.port);
    acceptor_ = std::make_unique<asio::ip::tcp::acceptor>(io_);
    acceptor_->open(endpoint.protocol(), ec);
    if (!ec) acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_->bind(endpoint, ec);
    if (!ec) acceptor_->listen(1, ec);
    if (ec) {
        if (ec == asio::error::address_in_use)
            return make_error(ErrorCode::SystemError,
                              "Can't bind address: Address already in use.");
        return make_error(ErrorCode::SystemError, "Can't bind address: " + ec.message() + ".");
    }
    announce();
    if (ep_.host == "127.0.0.1" || ep_.host == "::1") {
        fmt::print(
            stderr,
            "(accepting connections from this machine only; use 0.0.0.0:{} to accept others)\n",
            acceptor_->local_endpoint().port());
        std::fflush(stderr);
    }
    return ok_status();
}

void Listener::announce() const {
    if (!acceptor_) return;
    error_code ec;
    fmt::print(stderr, "Listening on port {}\n", acceptor_->local_endpoint(ec).port());
    std::fflush(stderr);
}

void Listener::async_accept(const AcceptHandler& handler) {
    switch (ep_.kind) {
    case Endpoint::Kind::Stdio:
        asio::post(io_, [this, handler] { handler(std::make_unique<StdioConnection>(io_)); });
        return;
    case Endpoint::Kind::Serial:
        asio::post(io_, [this, handler] {
            asio::serial_port port(io_);
            error_code ec;
            port.open(ep_.device, ec);
            if (ec) {
                fmt::print(stderr, "Remote communication error: {}: {}.\n", ep_.device,
                           ec.message());
                handler(nullptr);
                return;
            }
            if (baud_ != 0) port.set_option(asio::serial_port::baud_rate(baud_), ec);
            fmt::print(stderr, "Remote debugging using {}\n", ep_.device);
            std::fflush(stderr);
            handler(std::make_unique<StreamConnection<asio::serial_port>>(std::move(port)));
        });
        return;
    case Endpoint::Kind::Tcp:
        acceptor_->async_accept([handler](const error_code& ec, asio::ip::tcp::socket socket) {
            if (ec) {
                handler(nullptr);
                return;
            }
            error_code e2;
            socket.set_option(asio::ip::tcp::no_delay(true), e2);
            auto remote = socket.remote_endpoint(e2);
            fmt::print(stderr, "Remote debugging from host {}, port {}\n",
                       remote.address().to_string(), remote.port());
            std::fflush(stderr);
            handler(std::make_unique<TcpConnection>(std::move(socket)));
        });
        return;
    }
}

void Listener::close() {
    if (acceptor_) {
        error_code ec;
        acceptor_->close(ec);
    }
}

} // namespace tpagent::agent
