// target.xml must parse, and describe exactly the registers of the g block.
#include "arch/x86_64/architecture.hpp"
#include "arch/x86_64/cpu_features.hpp"
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <catch2/catch.hpp>
#include <sstream>

using namespace tpagent::arch;
using namespace tpagent::arch::x86_64;
namespace pt = boost::property_tree;

namespace {

struct XmlSummary {
    std::string architecture;
    std::string osabi;
    int registers = 0;
    std::size_t bits = 0;
    bool regnums_in_order = true;
    bool names_match = true;
};

XmlSummary summarize(const Architecture& arch) {
    const auto xml = arch.feature_xml("target.xml");
    REQUIRE(xml.has_value());
    std::istringstream in(*xml);
    pt::ptree tree;
    pt::read_xml(in, tree); // throws on malformed XML
    XmlSummary s;
    const pt::ptree& target = tree.get_child("target");
    s.architecture = target.get<std::string>("architecture");
    s.osabi = target.get<std::string>("osabi");
    for (const auto& [tag, feature] : target) {
        if (tag != "feature") continue;
        for (const auto& [child, node] : feature) {
            if (child != "reg") continue;
            const auto regnum = node.get<int>("<xmlattr>.regnum");
            const auto name = node.get<std::string>("<xmlattr>.name");
            s.regnums_in_order &= regnum == s.registers;
            s.names_match &=
                static_cast<std::size_t>(regnum) < arch.registers().size() &&
                name == arch.registers()[regnum].name &&
                node.get<std::size_t>("<xmlattr>.bitsize") == arch.registers()[regnum].size * 8;
            s.bits += node.get<std::size_t>("<xmlattr>.bitsize");
            s.registers++;
        }
    }
    return s;
}

} // namespace

TEST_CASE("x86-64 target.xml is well-formed and matches the register table") {
    for (std::uint64_t xcr0 : {0x3ull, 0x7ull, 0x1full, 0xe7ull, 0x2ffull}) {
        CAPTURE(xcr0);
        X86_64Architecture arch(cpu_features_for_xcr0(xcr0));
        const XmlSummary s = summarize(arch);
        CHECK(s.architecture == "i386:x86-64");
        CHECK(s.osabi == "GNU/Linux");
        CHECK(s.registers == static_cast<int>(arch.registers().size()));
        CHECK(s.bits == arch.g_size() * 8);
        CHECK(s.regnums_in_order);
        CHECK(s.names_match);
    }
}

TEST_CASE("x86-64 host target.xml covers the host g block") {
    const Architecture& arch = host_architecture();
    const XmlSummary s = summarize(arch);
    CHECK(s.registers == static_cast<int>(arch.registers().size()));
    CHECK(s.bits == arch.g_size() * 8);
    const auto xml = *arch.feature_xml("target.xml");
    CHECK(xml.find("org.gnu.gdb.i386.core") != std::string::npos);
    CHECK(xml.find("org.gnu.gdb.i386.sse") != std::string::npos);
    CHECK(xml.find("org.gnu.gdb.i386.linux") != std::string::npos);
    CHECK(xml.find("org.gnu.gdb.i386.segments") != std::string::npos);
    WARN("host g size " << arch.g_size() << " bytes, " << arch.registers().size() << " registers");
}
