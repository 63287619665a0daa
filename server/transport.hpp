// Byte channels to gdb: TCP, stdio, serial tty. Reads are asynchronous (the event loop also
// waits for the inferior); writes are short and synchronous.
#pragma once
#include "base/asio.hpp"
#include "server/address_filter.hpp"
#include "base/result.hpp"
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tpagent::server {

class Connection {
  public:
    using ReadHandler = std::function<void(const boost::system::error_code&, std::size_t)>;
    virtual ~Connection() = default;
    virtual void async_read(std::span<std::uint8_t> buf, ReadHandler handler) = 0;
    virtual bool write(std::string_view data) = 0;
    virtual void close() = 0;
    virtual bool is_stdio() const { return false; }
};

// Where gdb reaches us, from the COMM argument.
struct Endpoint {
    enum class Kind { Tcp, Stdio, Serial } kind = Kind::Tcp;
    std::string host; // TCP: address to bind
    unsigned short port = 0;
    std::string device; // serial
    std::string spec;   // COMM as given, for messages
};
Result<Endpoint> parse_endpoint(const std::string& comm);
// A TCP endpoint's host as an address (a name resolved).
Result<boost::asio::ip::address> resolve_host(const Endpoint& ep);
// Keepalive probes and a bound on unacknowledged data, so that a peer whose host vanished (no
// FIN, no RST) is seen gone within about 25 s.
void detect_vanished_peer(boost::asio::ip::tcp::socket& socket);
// An acceptor bound to a TCP endpoint and listening, closed in the programs tpagent starts; or
// why not, as gdbserver says it ("Can't bind address: ...").
Result<std::unique_ptr<boost::asio::ip::tcp::acceptor>> listen_tcp(boost::asio::io_context& io,
                                                                   const Endpoint& ep);
// A socket of tpagent's closed in the programs it starts (they would hold its ports open).
void close_on_exec(int fd);
// A port: decimal digits, 0 to 65535.
std::optional<unsigned short> parse_port(std::string_view text);

// Waits for gdb on an endpoint: binds once, hands out one connection at a time.
class Listener {
  public:
    Listener(boost::asio::io_context& io, Endpoint ep, unsigned baud, AddressFilter allowed = {})
        : io_(io), ep_(std::move(ep)), baud_(baud), allowed_(std::move(allowed)) {}
    // Makes the endpoint usable before any program is started, so that a COMM that cannot work
    // fails tpagent with nothing left behind: binds a TCP endpoint, opens a serial tty (kept for
    // the first connection). Prints nothing; announce() does.
    Status open();
    // Prints the "Listening on port N" line scripts wait for (again at each reopen, as before).
    void announce() const;
    // The same at start-up, with a word on who may connect when only this machine may.
    void announce_first() const;
    using AcceptHandler = std::function<void(std::unique_ptr<Connection>)>;
    // The next session's connection goes to `handler` (nullptr: the endpoint failed). Until
    // async_accept is called again, a TCP endpoint keeps accepting and turns every other gdb
    // away at once, with an error reply naming the one served, instead of leaving it to time
    // out in the backlog and have its stale packets run when the session ends.
    void async_accept(const AcceptHandler& handler);
    void close();
    const Endpoint& endpoint() const { return ep_; }

  private:
    Status bind_tcp();
    void accept_tcp();
    void turn_away(boost::asio::ip::tcp::socket socket, const std::string& from);
    Result<std::unique_ptr<boost::asio::serial_port>> open_serial() const;

    boost::asio::io_context& io_;
    Endpoint ep_;
    unsigned baud_;
    AddressFilter allowed_; // empty: everyone who reaches the port
    std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
    std::unique_ptr<boost::asio::serial_port> serial_; // opened by open(), until gdb uses it
    AcceptHandler handler_;  // TCP: where the next session's connection goes
    bool accepting_ = false; // TCP: an accept is pending
    std::string serving_;    // TCP: "host H, port P" of the gdb served; empty: none
};

} // namespace tpagent::server
