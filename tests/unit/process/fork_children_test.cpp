#include "process/linux/fork_children.hpp"
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <vector>

using namespace tpagent::process;

TEST_CASE("held fork children: held until taken, vfork ones known", "[fork_children]") {
    ForkChildren children;
    CHECK_FALSE(children.held(100));
    children.hold(100, false);
    children.hold(200, true);
    CHECK(children.held(100));
    CHECK(children.size() == 2);
    CHECK(children.list() == std::vector<pid_t>{100, 200});
    CHECK(children.take(200) == std::optional<bool>(true)); // it shared the parent's memory
    CHECK(children.take(100) == std::optional<bool>(false));
    CHECK_FALSE(children.take(100).has_value()); // no longer held
    CHECK(children.size() == 0);
}

TEST_CASE("held fork children: a child not held is neither released nor killed",
          "[fork_children]") {
    ForkChildren children;
    const std::uint8_t trap[] = {0xcc};
    AddressSpace memory(trap);
    CHECK_FALSE(children.release(300, memory));
    CHECK_FALSE(children.kill(300));
}
