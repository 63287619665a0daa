// Compiled code against the interpreter on random valid programs.
#include "ax_builder.hpp"
#include "random_target.hpp"
#include <random>

using namespace tpagent::bytecode;
using namespace tpagent::bytecode::testing;

TEST_CASE("compiled code equals the interpreter on random programs") {
    PrngChooser chooser{std::mt19937_64(20240611)};
    RandomProgram<PrngChooser> gen(chooser);
    Limits limits;
    limits.max_backward_jumps = 50;
    unsigned ok = 0, failed = 0;
    for (int i = 0; i < 3000; ++i) {
        const std::vector<std::uint8_t> bytes = gen.make();
        const FakeTarget target = random_target(chooser);
        CAPTURE(i, bytes.size());
        const Outcome o = run_all(bytes, target, limits);
        (o.status == EvalStatus::Ok ? ok : failed)++;
    }
    // Both kinds of outcome must be well represented for the comparison to mean much.
    INFO("ok " << ok << " failed " << failed);
    CHECK(ok > 800);
    CHECK(failed > 200);
}
