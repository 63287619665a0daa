#include "server/options.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace tpagent;
using namespace tpagent::server;

namespace {
Result<ServerOptions> parse(std::vector<std::string> args) {
    args.insert(args.begin(), "tpagent");
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    return parse_options(static_cast<int>(args.size()), argv.data());
}
} // namespace

TEST_CASE("options: the debug switches, as gdbserver spells them", "[server][options]") {
    auto plain = parse({":1234", "prog"});
    REQUIRE(plain.ok());
    CHECK_FALSE(plain->debug);
    CHECK_FALSE(plain->remote_debug);
    CHECK(plain->debug_timestamps);

    auto all = parse({"--debug", "--remote-debug", "--debug-format=none", ":1234", "prog"});
    REQUIRE(all.ok());
    CHECK(all->debug);
    CHECK(all->remote_debug);
    CHECK_FALSE(all->debug_timestamps);
    CHECK(parse({"--debug-format=none,timestamp", ":1234", "prog"})->debug_timestamps);
    CHECK(parse({"--debug-format=all", ":1234", "prog"})->debug_timestamps);

    auto bad = parse({"--debug-format=colour", ":1234", "prog"});
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().text == "unknown --debug-format option \"colour\"");
}
