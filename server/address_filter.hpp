// Which hosts may connect (--allow): IPv4 and IPv6 addresses and ADDRESS/PREFIX networks. An
// IPv4 peer on an IPv6 socket ([::]:PORT, ::ffff:a.b.c.d) is matched as IPv4.
#pragma once
#include "base/asio.hpp"
#include "base/result.hpp"
#include <string_view>
#include <vector>

namespace tpagent::server {

class AddressFilter {
  public:
    // Adds a comma-separated list ("10.0.0.0/8,192.168.1.7,fd00::/8"); on an error nothing of
    // it is added and the text names the entry.
    Status add(std::string_view list);
    bool empty() const { return networks_.empty(); }
    bool allows(const boost::asio::ip::address& peer) const;

  private:
    struct Network {
        boost::asio::ip::address address; // its host bits cleared
        unsigned prefix;
    };
    std::vector<Network> networks_;
};

} // namespace tpagent::server
