#include "experiment/trace_file_writer.hpp"
#include <catch2/catch.hpp>

using namespace tpagent::experiment;

TEST_CASE("without a save directory the name is used as given", "[save]") {
    CHECK(*resolve_save_path("/tmp/x.tf", std::nullopt) == "/tmp/x.tf");
    CHECK(*resolve_save_path("rel/x.tf", std::nullopt) == "rel/x.tf");
    CHECK_FALSE(resolve_save_path("", std::nullopt).ok());
}

TEST_CASE("a save directory confines names", "[save]") {
    std::optional<std::string> dir = "/srv/traces";
    CHECK(*resolve_save_path("run.tf", dir) == "/srv/traces/run.tf");
    CHECK(*resolve_save_path("sub/run.tf", dir) == "/srv/traces/sub/run.tf");
    CHECK(*resolve_save_path("/srv/traces/run.tf", dir) == "/srv/traces/run.tf");
    CHECK_FALSE(resolve_save_path("/tmp/run.tf", dir).ok());
    CHECK_FALSE(resolve_save_path("/srv/tracesX/run.tf", dir).ok());
    CHECK_FALSE(resolve_save_path("../run.tf", dir).ok());
    CHECK_FALSE(resolve_save_path("/srv/traces/../etc/passwd", dir).ok());
    CHECK_FALSE(resolve_save_path("/srv/traces", dir).ok());
}
