#include "arch/x86_64/target_xml.hpp"
#include <fmt/format.h>
#include <string_view>

namespace tpagent::arch::x86_64 {
namespace {

// Types are scoped to the feature that defines them, so avx512 repeats vec128.
constexpr std::string_view kVec128Types = R"(    <vector id="v8bf16" type="bfloat16" count="8"/>
    <vector id="v8h" type="ieee_half" count="8"/>
    <vector id="v4f" type="ieee_single" count="4"/>
    <vector id="v2d" type="ieee_double" count="2"/>
    <vector id="v16i8" type="int8" count="16"/>
    <vector id="v8i16" type="int16" count="8"/>
    <vector id="v4i32" type="int32" count="4"/>
    <vector id="v2i64" type="int64" count="2"/>
    <union id="vec128">
      <field name="v8_bfloat16" type="v8bf16"/>
      <field name="v8_half" type="v8h"/>
      <field name="v4_float" type="v4f"/>
      <field name="v2_double" type="v2d"/>
      <field name="v16_int8" type="v16i8"/>
      <field name="v8_int16" type="v8i16"/>
      <field name="v4_int32" type="v4i32"/>
      <field name="v2_int64" type="v2i64"/>
      <field name="uint128" type="uint128"/>
    </union>
)";

constexpr std::string_view kCoreTypes = R"(    <flags id="i386_eflags" size="4">
      <field name="CF" start="0" end="0"/>
      <field name="" start="1" end="1"/>
      <field name="PF" start="2" end="2"/>
      <field name="AF" start="4" end="4"/>
      <field name="ZF" start="6" end="6"/>
      <field name="SF" start="7" end="7"/>
      <field name="TF" start="8" end="8"/>
      <field name="IF" start="9" end="9"/>
      <field name="DF" start="10" end="10"/>
      <field name="OF" start="11" end="11"/>
      <field name="NT" start="14" end="14"/>
      <field name="RF" start="16" end="16"/>
      <field name="VM" start="17" end="17"/>
      <field name="AC" start="18" end="18"/>
      <field name="VIF" start="19" end="19"/>
      <field name="VIP" start="20" end="20"/>
      <field name="ID" start="21" end="21"/>
    </flags>
)";

constexpr std::string_view kMxcsrType = R"(    <flags id="i386_mxcsr" size="4">
      <field name="IE" start="0" end="0"/>
      <field name="DE" start="1" end="1"/>
      <field name="ZE" start="2" end="2"/>
      <field name="OE" start="3" end="3"/>
      <field name="UE" start="4" end="4"/>
      <field name="PE" start="5" end="5"/>
      <field name="DAZ" start="6" end="6"/>
      <field name="IM" start="7" end="7"/>
      <field name="DM" start="8" end="8"/>
      <field name="ZM" start="9" end="9"/>
      <field name="OM" start="10" end="10"/>
      <field name="UM" start="11" end="11"/>
      <field name="PM" start="12" end="12"/>
      <field name="FZ" start="15" end="15"/>
    </flags>
)";

constexpr std::string_view kMpxTypes = R"(    <struct id="br128">
      <field name="lbound" type="uint64"/>
      <field name="ubound_raw" type="uint64"/>
    </struct>
    <struct id="_bndstatus" size="8">
      <field name="bde" start="2" end="63" type="uint64"/>
      <field name="error" start="0" end="1" type="uint64"/>
    </struct>
    <union id="status">
      <field name="raw" type="data_ptr"/>
      <field name="status" type="_bndstatus"/>
    </union>
    <struct id="_bndcfgu" size="8">
      <field name="base" start="12" end="63" type="uint64"/>
      <field name="reserved" start="2" end="11" type="uint64"/>
      <field name="preserved" start="1" end="1" type="uint64"/>
      <field name="enabled" start="0" end="0" type="uint64"/>
    </struct>
    <union id="cfgu">
      <field name="raw" type="data_ptr"/>
      <field name="config" type="_bndcfgu"/>
    </union>
)";

constexpr std::string_view kAvx512Types = R"(    <vector id="v2ui128" type="uint128" count="2"/>
)";

void append_types(std::string& xml, std::string_view feature) {
    if (feature == "org.gnu.gdb.i386.core") {
        xml += kCoreTypes;
    } else if (feature == "org.gnu.gdb.i386.sse") {
        xml += kVec128Types;
        xml += kMxcsrType;
    } else if (feature == "org.gnu.gdb.i386.mpx") {
        xml += kMpxTypes;
    } else if (feature == "org.gnu.gdb.i386.avx512") {
        xml += kVec128Types;
        xml += kAvx512Types;
    }
}

} // namespace

std::string build_target_xml(const RegisterLayout& layout) {
    std::string xml = "<?xml version=\"1.0\"?>\n"
                      "<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n"
                      "<target>\n"
                      "  <architecture>i386:x86-64</architecture>\n"
                      "  <osabi>GNU/Linux</osabi>\n";
    const auto regs = layout.registers();
    const auto types = layout.types();
    for (const RegisterFeature& f : layout.features()) {
        xml += fmt::format("  <feature name=\"{}\">\n", f.name);
        append_types(xml, f.name);
        for (int r = f.first; r < f.first + f.count; ++r) {
            xml += fmt::format("    <reg name=\"{}\" bitsize=\"{}\" type=\"{}\" regnum=\"{}\"",
                               regs[r].name, regs[r].size * 8, types[r].type, r);
            if (types[r].group) xml += fmt::format(" group=\"{}\"", types[r].group);
            xml += "/>\n";
        }
        xml += "  </feature>\n";
    }
    xml += "</target>\n";
    return xml;
}

} // namespace tpagent::arch::x86_64
