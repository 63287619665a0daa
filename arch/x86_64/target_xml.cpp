#include "arch/x86_64/target_xml.hpp"
#include <fmt/format.h>
#include <span>
#include <string_view>
#include <vector>

namespace tpagent::arch::x86_64 {
namespace {

// gdb's type elements, written as its features/*.xml files write them.

// A field of a struct, union or flags type: of type `type`, or a bit range (start, end) of
// the whole, or both.
struct Field {
    std::string_view name;
    std::string_view type = {};
    int start = -1, end = -1; // no range when negative
};

// <kind id="id" size="size"> (no size when 0) with its fields.
void append_type(std::string& xml, std::string_view kind, std::string_view id, int size,
                 std::span<const Field> fields) {
    xml += fmt::format("    <{} id=\"{}\"", kind, id);
    if (size) xml += fmt::format(" size=\"{}\"", size);
    xml += ">\n";
    for (const Field& f : fields) {
        xml += fmt::format("      <field name=\"{}\"", f.name);
        if (f.start >= 0) xml += fmt::format(" start=\"{}\" end=\"{}\"", f.start, f.end);
        if (!f.type.empty()) xml += fmt::format(" type=\"{}\"", f.type);
        xml += "/>\n";
    }
    xml += fmt::format("    </{}>\n", kind);
}
void append_type(std::string& xml, std::string_view kind, std::string_view id, int size,
                 std::initializer_list<Field> fields) {
    append_type(xml, kind, id, size, std::span(fields.begin(), fields.size()));
}

// A 4-byte flags type of one-bit fields, named by bit number (nullptr: no field there).
void append_flags(std::string& xml, std::string_view id, std::initializer_list<const char*> bits) {
    std::vector<Field> fields;
    int bit = 0;
    for (const char* name : bits) {
        if (name) fields.push_back({name, {}, bit, bit});
        ++bit;
    }
    append_type(xml, "flags", id, 4, fields);
}

struct Vector {
    std::string_view id, type;
    int count;
};
void append_vectors(std::string& xml, std::initializer_list<Vector> vectors) {
    for (const Vector& v : vectors)
        xml += fmt::format("    <vector id=\"{}\" type=\"{}\" count=\"{}\"/>\n", v.id, v.type,
                           v.count);
}

void append_vec128(std::string& xml) {
    append_vectors(xml, {{"v8bf16", "bfloat16", 8},
                         {"v8h", "ieee_half", 8},
                         {"v4f", "ieee_single", 4},
                         {"v2d", "ieee_double", 2},
                         {"v16i8", "int8", 16},
                         {"v8i16", "int16", 8},
                         {"v4i32", "int32", 4},
                         {"v2i64", "int64", 2}});
    append_type(xml, "union", "vec128", 0,
                {{"v8_bfloat16", "v8bf16"},
                 {"v8_half", "v8h"},
                 {"v4_float", "v4f"},
                 {"v2_double", "v2d"},
                 {"v16_int8", "v16i8"},
                 {"v8_int16", "v8i16"},
                 {"v4_int32", "v4i32"},
                 {"v2_int64", "v2i64"},
                 {"uint128", "uint128"}});
}

// Types are scoped to the feature that defines them, so avx512 repeats vec128.
void append_types(std::string& xml, std::string_view feature) {
    if (feature == "org.gnu.gdb.i386.core") {
        append_flags(xml, "i386_eflags",
                     {"CF", "",   "PF", nullptr, "AF",    nullptr, "ZF", "SF",
                      "TF", "IF", "DF", "OF",    nullptr, nullptr, "NT", nullptr,
                      "RF", "VM", "AC", "VIF",   "VIP",   "ID"});
    } else if (feature == "org.gnu.gdb.i386.sse") {
        append_vec128(xml);
        append_flags(xml, "i386_mxcsr",
                     {"IE", "DE", "ZE", "OE", "UE", "PE", "DAZ", "IM", "DM", "ZM", "OM", "UM", "PM",
                      nullptr, nullptr, "FZ"});
    } else if (feature == "org.gnu.gdb.i386.mpx") {
        append_type(xml, "struct", "br128", 0, {{"lbound", "uint64"}, {"ubound_raw", "uint64"}});
        append_type(xml, "struct", "_bndstatus", 8,
                    {{"bde", "uint64", 2, 63}, {"error", "uint64", 0, 1}});
        append_type(xml, "union", "status", 0, {{"raw", "data_ptr"}, {"status", "_bndstatus"}});
        append_type(xml, "struct", "_bndcfgu", 8,
                    {{"base", "uint64", 12, 63},
                     {"reserved", "uint64", 2, 11},
                     {"preserved", "uint64", 1, 1},
                     {"enabled", "uint64", 0, 0}});
        append_type(xml, "union", "cfgu", 0, {{"raw", "data_ptr"}, {"config", "_bndcfgu"}});
    } else if (feature == "org.gnu.gdb.i386.avx512") {
        append_vec128(xml);
        append_vectors(xml, {{"v2ui128", "uint128", 2}});
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
