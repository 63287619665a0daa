// printf with a flattened format and no C library (bytecode/printf_flat.hpp, rt::printf_flat),
// as the in-process agent prints a dprintf: the same text as rt::printf, which hands each
// parsed spec to the C library's snprintf, for every format the parser accepts; and compiled
// code given the formats' flattened copies prints through it as the interpreter prints.
// Built for both architectures (the arm64 one runs under qemu user mode).
#include "arch/compiler_backend.hpp"
#include "ax_builder.hpp"
#include "bytecode/printf_flat.hpp"
#include "bytecode/runtime.hpp"
#include "relocated_code.hpp"
#include <random>
#include <string>

using namespace tpagent;
using namespace tpagent::bytecode;
using namespace tpagent::bytecode::testing;

namespace {

constexpr std::uint64_t kStrings = 0x5000;

FakeTarget with_strings() {
    FakeTarget t;
    const std::string text = std::string("hello, world") + '\0' + "" + '\0' + "x" + '\0';
    std::vector<std::uint8_t> bytes(text.begin(), text.end());
    t.map(kStrings, bytes);
    return t;
}

std::string printed_by(const FakeTarget& target, const PrintfFormat& format,
                       const std::vector<std::uint64_t>& args, bool flat) {
    FakeTarget t = target;
    Context c = t.context();
    EvalOut out;
    const std::vector<std::uint8_t> block = flatten(format);
    std::vector<std::uint64_t> aligned((block.size() + 7) / 8);
    std::memcpy(aligned.data(), block.data(), block.size());
    const auto r =
        flat ? rt::printf_flat(&c, &out, reinterpret_cast<const FlatFormat*>(aligned.data()),
                               args.data())
             : rt::printf(&c, &out, &format, args.data());
    if (r.status != 0)
        return "<failed " + std::to_string(r.status) + " at " + std::to_string(out.fault_address) +
               ">";
    return t.printed;
}

// A conversion of the parser's grammar, sometimes one it refuses.
std::string random_conversion(std::mt19937_64& rng) {
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    std::string spec = "%";
    const char flags[] = "-+ #0";
    for (int i = 0, n = static_cast<int>(pick(3)); i < n; ++i)
        spec += flags[pick(5)];
    if (pick(2)) spec += std::to_string(pick(3) ? pick(12) : pick(40));
    if (pick(3) == 0) spec += "." + std::to_string(pick(3) ? pick(6) : pick(30));
    const char* lengths[] = {"", "", "", "hh", "h", "l", "ll", "z", "j", "t"};
    spec += lengths[pick(10)];
    const char convs[] = "diuoxXcsp";
    spec += convs[pick(9)];
    return spec;
}

std::uint64_t random_value(std::mt19937_64& rng) {
    switch (rng() % 6) {
    case 0:
        return 0;
    case 1:
        return rng() % 10;
    case 2:
        return ~std::uint64_t{0} - rng() % 10; // small negatives
    case 3:
        return std::uint64_t{1} << (rng() % 64);
    case 4:
        return (std::uint64_t{1} << 63) - rng() % 3;
    default:
        return rng();
    }
}

} // namespace

TEST_CASE("printf_flat: every accepted format prints as snprintf prints it") {
    std::mt19937_64 rng(20261130);
    const FakeTarget t = with_strings();
    const std::uint64_t strings[] = {0, kStrings, kStrings + 7, kStrings + 13, kStrings + 15};
    unsigned accepted = 0;
    for (int i = 0; i < 20000; ++i) {
        std::string text = "[";
        const int n = 1 + static_cast<int>(rng() % 3);
        for (int k = 0; k < n; ++k)
            text += random_conversion(rng) + (k + 1 < n ? "|" : "");
        text += "]";
        auto format = parse_printf_format(text);
        if (!format) continue;
        ++accepted;
        std::vector<std::uint64_t> args;
        for (const FormatPiece& piece : format->pieces)
            if (piece.has_arg)
                args.push_back(piece.kind == ArgKind::String ? strings[rng() % 5]
                                                             : random_value(rng));
        CAPTURE(text, args);
        CHECK(printed_by(t, *format, args, true) == printed_by(t, *format, args, false));
    }
    CHECK(accepted > 5000);
}

TEST_CASE("printf_flat: literals, escapes, %%, long output and an unreadable string") {
    const FakeTarget t = with_strings();
    for (const char* text : {"no conversion\\n", "100%% of %d\\t%s.", "%c%c%c", "",
                             "%512d|%512d|%512d", "%-20s|%.3s|%20.1s"}) {
        CAPTURE(text);
        auto format = parse_printf_format(text);
        REQUIRE(format);
        const std::vector<std::uint64_t> args(format->nargs, kStrings);
        CHECK(printed_by(t, *format, args, true) == printed_by(t, *format, args, false));
    }
    auto format = parse_printf_format("%d %s");
    REQUIRE(format);
    CHECK(printed_by(t, *format, {1, 0x9000}, true) == "<failed 1 at 36864>");
    CHECK(printed_by(t, *format, {1, 0x9000}, false) == "<failed 1 at 36864>");
}

TEST_CASE("printf_flat: compiled code given flattened formats prints as interpreted") {
    // Two formats: the code passes each one's placed copy, not this process's PrintfFormat.
    Ax a;
    // (gdb pushes printf's arguments last first: the first is the deepest but for the two
    // it pushes after them, function and channel.)
    a.k(42).k(kStrings).k(0).k(0).printf(2, "%s=%-5d|");
    a.k(-7).k(0).k(0).printf(1, "%+x\\n").k(1).end();
    const Program p = must_validate(a.b);
    REQUIRE(p.formats().size() == 2);
    std::vector<std::vector<std::uint64_t>> placed;
    FormatAddresses addresses;
    for (const PrintfFormat& f : p.formats()) {
        const std::vector<std::uint8_t> block = flatten(f);
        placed.emplace_back((block.size() + 7) / 8);
        std::memcpy(placed.back().data(), block.data(), block.size());
        addresses.push_back(reinterpret_cast<std::uintptr_t>(placed.back().data()));
    }
    HelperAddresses helpers = host_helper_addresses();
    helpers.printf = reinterpret_cast<std::uintptr_t>(&rt::printf_flat);
    auto code = arch::host_compiler_backend().translate(p, helpers, {}, addresses);
    REQUIRE(code);
    const Relocated relocated(*code, 16);
    const FakeTarget t = with_strings();
    const Outcome want = interpret(p, t);
    CHECK(want.printed == "hello, world=42   |fffffff9\n");
    CHECK(relocated.run(t, false) == want);
    CHECK(relocated.run(t, true) == want);

    // Formats placed for another program are refused rather than half used.
    addresses.pop_back();
    CHECK_FALSE(arch::host_compiler_backend().translate(p, helpers, {}, addresses));
}
