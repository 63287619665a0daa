// The compilers' shared front end, seen through a backend that records the hooks it is asked
// for instead of encoding them (each hook is one unit of "code").
#include "arch/jit_front_end.hpp"
#include "bytecode/program.hpp"
#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace tpagent;
using namespace tpagent::arch;

namespace {

class RecordingBackend final : public jit::FrontEnd {
  public:
    RecordingBackend(const bytecode::Program& p, const bytecode::HelperAddresses& h,
                     const bytecode::StagedRegisterLayout& staged = {})
        : FrontEnd(p, h, staged, {}) {}
    std::vector<std::string> log;
    std::vector<std::size_t> label_positions;
    std::vector<std::pair<std::size_t, std::size_t>> patches; // site -> where it lands

  private:
    std::size_t put(std::string what) {
        log.push_back(std::move(what));
        return size_++;
    }
    void emit_prologue(bool has_backward) override {
        put(has_backward ? "prologue budget" : "prologue");
    }
    void load_entry(unsigned i, unsigned scratch) override {
        put("load " + std::to_string(i) + " " + std::to_string(scratch));
    }
    void store_entry(unsigned i, unsigned scratch) override {
        stack()[i].is_const = false;
        put("store " + std::to_string(i) + " " + std::to_string(scratch));
    }
    void materialize(unsigned i) override {
        if (!stack()[i].is_const) return;
        stack()[i].is_const = false;
        put("materialize " + std::to_string(i));
    }
    void at_label() override { label_positions.push_back(size_); }
    void emit_binary(bytecode::Op) override { put("binary"); }
    void emit_divrem(const bytecode::Insn&) override { put("divrem"); }
    void emit_not(bytecode::Op) override { put("not"); }
    void emit_extend(bytecode::Op, unsigned) override { put("extend"); }
    void emit_ref(const bytecode::Insn&) override { put("ref"); }
    void emit_load_staged(const bytecode::StagedRegister& staged) override {
        put("load staged " + std::to_string(staged.offset) + " " + std::to_string(staged.size));
    }
    void emit_call(const jit::HelperCall& call) override {
        put("call");
        if (call.pushes_result) push(jit::kScratch0);
    }
    void emit_printf(const bytecode::Insn&) override { put("printf"); }
    void emit_return() override {
        const jit::Slot top = stack().back();
        put(top.is_const ? "return " + std::to_string(top.k) : "return entry");
    }
    void emit_spend_budget(std::uint32_t) override { put("budget"); }
    std::size_t code_size() const override { return size_; }
    jit::BranchSite emit_jump() override { return {put("jump")}; }
    jit::BranchSite emit_branch_if(unsigned i, bool nonzero) override {
        return {put(std::string(nonzero ? "branch if nonzero " : "branch if zero ") +
                    std::to_string(i))};
    }
    void patch(jit::BranchSite site, std::size_t to) override { patches.emplace_back(site.at, to); }
    void emit_fail_status(const jit::FailExit&) override { put("fail status"); }
    void emit_fail_tail(bool reached) override {
        if (reached) put("fail tail");
    }
    std::vector<std::uint8_t> take_code() override { return {}; }

    std::size_t size_ = 0;
};

bytecode::Program program_of(const std::vector<std::uint8_t>& bytes) {
    auto p = bytecode::validate(bytes, 58, {});
    REQUIRE(p.ok());
    return std::move(*p);
}

} // namespace

TEST_CASE("jit front end: constants are folded and never reach the backend") {
    // const8 2; const8 3; add; ext 8; end
    const auto p = program_of({0x22, 2, 0x22, 3, 0x02, 0x16, 8, 0x27});
    RecordingBackend backend(p, {});
    backend.run();
    CHECK(backend.log == std::vector<std::string>{"prologue", "return 5"});
}

TEST_CASE("jit front end: a forward branch lands on its target's label") {
    // reg 0; if_goto 9; const8 7; end; (9) const8 9; end
    const auto p = program_of({0x26, 0, 0, 0x20, 0, 9, 0x22, 7, 0x27, 0x22, 9, 0x27});
    RecordingBackend backend(p, {});
    backend.run();
    CHECK(backend.log == std::vector<std::string>{"prologue", "call", "store 0 0",
                                                  "branch if nonzero 0", "return 7", "return 9"});
    REQUIRE(backend.label_positions == std::vector<std::size_t>{5});
    CHECK(backend.patches == std::vector<std::pair<std::size_t, std::size_t>>{{3, 5}});
}

TEST_CASE("jit front end: a divisor of constant 0 fails at its instruction, without code") {
    // reg 0; const8 0; div_signed; end
    const auto p = program_of({0x26, 0, 0, 0x22, 0, 0x05, 0x27});
    RecordingBackend backend(p, {});
    backend.run();
    CHECK(backend.log == std::vector<std::string>{"prologue", "call", "store 0 0", "jump",
                                                  "return 0", "fail status", "jump", "fail tail"});
    CHECK(backend.patches == std::vector<std::pair<std::size_t, std::size_t>>{{3, 5}, {6, 7}});
}

TEST_CASE("jit front end: a staged register is a load, any other a helper call") {
    // reg 1; reg 2; add; reg 9; add; end
    const auto p = program_of({0x26, 0, 1, 0x26, 0, 2, 0x02, 0x26, 0, 9, 0x02, 0x27});
    // 1 staged in 4 bytes, 2 not staged (size 0), 9 past the layout; and one of 3 bytes
    // (no single load) is the helper's too.
    const bytecode::StagedRegisterLayout layout = {{0, 8}, {40, 4}, {48, 0}, {56, 3}};
    RecordingBackend backend(p, {}, layout);
    backend.run();
    CHECK(backend.log == std::vector<std::string>{"prologue", "load staged 40 4", "store 0 0",
                                                  "call", "store 1 0", "binary", "store 0 0",
                                                  "call", "store 1 0", "binary", "store 0 0",
                                                  "return entry"});
    const auto three = program_of({0x26, 0, 3, 0x27});
    RecordingBackend odd(three, {}, layout);
    odd.run();
    CHECK(odd.log == std::vector<std::string>{"prologue", "call", "store 0 0", "return entry"});
}
