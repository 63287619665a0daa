#include "protocol/xml.hpp"
#include <catch2/catch.hpp>

using tpagent::protocol::xml_escape;

TEST_CASE("xml_escape escapes what XML reserves and nothing else", "[xml]") {
    CHECK(xml_escape("plain name-1.so") == "plain name-1.so");
    CHECK(xml_escape(R"(<a & "b" 'c'>)") == "&lt;a &amp; &quot;b&quot; &apos;c&apos;&gt;");
    CHECK(xml_escape("") == "");
}
