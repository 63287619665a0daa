#include "server/address_filter.hpp"
#include <charconv>
#include <fmt/format.h>
#include <string>

namespace tpagent::server {
namespace asio = boost::asio;
namespace {

// The first `prefix` bits of the address's bytes (network order), the rest cleared.
template <typename Bytes> Bytes masked(Bytes bytes, unsigned prefix) {
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        const unsigned keep =
            prefix > 8 * i ? std::min(8u, prefix - 8 * static_cast<unsigned>(i)) : 0;
        bytes[i] &= static_cast<unsigned char>(keep ? 0xff << (8 - keep) : 0);
    }
    return bytes;
}

asio::ip::address masked(const asio::ip::address& a, unsigned prefix) {
    if (a.is_v4()) return asio::ip::address_v4(masked(a.to_v4().to_bytes(), prefix));
    return asio::ip::address_v6(masked(a.to_v6().to_bytes(), prefix));
}

asio::ip::address plain(const asio::ip::address& a) {
    if (a.is_v6() && a.to_v6().is_v4_mapped())
        return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
    return a;
}

} // namespace

Status AddressFilter::add(std::string_view list) {
    std::vector<Network> added;
    while (!list.empty()) {
        const auto comma = list.find(',');
        const std::string_view entry = list.substr(0, comma);
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        const auto slash = entry.find('/');
        boost::system::error_code ec;
        const auto address = asio::ip::make_address(std::string(entry.substr(0, slash)), ec);
        if (ec)
            return make_error(
                ErrorCode::BadPacket,
                fmt::format("--allow {}: not an IP address or ADDRESS/PREFIX", entry));
        const unsigned bits = address.is_v4() ? 32 : 128;
        unsigned prefix = bits;
        if (slash != std::string_view::npos) {
            const std::string_view p = entry.substr(slash + 1);
            auto [end, err] = std::from_chars(p.data(), p.data() + p.size(), prefix);
            if (err != std::errc() || end != p.data() + p.size() || p.empty() || prefix > bits)
                return make_error(
                    ErrorCode::BadPacket,
                    fmt::format("--allow {}: the prefix length must be 0..{}", entry, bits));
        }
        const auto a = plain(address);
        if (a.is_v4() && address.is_v6()) prefix = prefix >= 96 ? prefix - 96 : 0;
        added.push_back({masked(a, prefix), prefix});
    }
    networks_.insert(networks_.end(), added.begin(), added.end());
    return ok_status();
}

bool AddressFilter::allows(const asio::ip::address& peer) const {
    const auto a = plain(peer);
    for (const Network& n : networks_)
        if (n.address.is_v4() == a.is_v4() && masked(a, n.prefix) == n.address) return true;
    return false;
}

} // namespace tpagent::server
