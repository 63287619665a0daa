// --allow's address lists: networks of either family, IPv4 peers on IPv6 sockets, bad entries.
#include "server/address_filter.hpp"

#include <catch2/catch.hpp>

using tpagent::server::AddressFilter;

namespace {
bool allows(const AddressFilter& f, const char* peer) {
    return f.allows(boost::asio::ip::make_address(peer));
}
} // namespace

TEST_CASE("address filter: networks and single hosts of both families", "[server]") {
    AddressFilter f;
    REQUIRE(f.empty());
    REQUIRE(f.add("10.1.2.3/8,192.168.7.9"));
    REQUIRE(f.add("fd00::/8"));
    CHECK_FALSE(f.empty());
    CHECK(allows(f, "10.0.0.1"));
    CHECK(allows(f, "10.255.255.255"));
    CHECK_FALSE(allows(f, "11.0.0.1"));
    CHECK(allows(f, "192.168.7.9"));
    CHECK_FALSE(allows(f, "192.168.7.8"));
    CHECK(allows(f, "fd12:3456::1"));
    CHECK_FALSE(allows(f, "fe80::1"));
    // An IPv4 peer on a [::] socket.
    CHECK(allows(f, "::ffff:10.9.8.7"));
    CHECK_FALSE(allows(f, "::ffff:127.0.0.1"));
    AddressFilter odd;
    REQUIRE(odd.add("172.16.0.0/12,::ffff:127.0.0.0/104,0.0.0.0/0"));
    CHECK(allows(odd, "8.8.8.8")); // /0: everyone of that family
    CHECK_FALSE(allows(odd, "2001:db8::1"));
    AddressFilter mapped;
    REQUIRE(mapped.add("::ffff:127.0.0.0/104"));
    CHECK(allows(mapped, "127.1.2.3"));
    CHECK_FALSE(allows(mapped, "128.0.0.1"));
}

TEST_CASE("address filter: a bad entry names itself and adds nothing", "[server]") {
    AddressFilter f;
    for (const char* bad :
         {"10.0.0.0/33", "1.2.3.4/", "1.2.3.4/x", "name.example", "::1/129", "10.0.0.1,,"}) {
        INFO(bad);
        auto s = f.add(bad);
        REQUIRE_FALSE(s);
        CHECK(s.error().text.find("--allow") == 0);
    }
    CHECK(f.empty());
    REQUIRE_FALSE(f.add("10.0.0.1,bad"));
    CHECK(f.empty()); // the good entry before the bad one is not kept either
}
