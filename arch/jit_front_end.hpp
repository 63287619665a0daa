// The ISA-independent half of the agent-expression compilers (arch/<isa>/ax_jit.cpp): one walk
// over the validated program, the virtual stack (an entry stays a compile-time constant until
// it must live in its home), constant folding, jump labels and their fixups, the loop budget
// and the failure exits. A backend derives from FrontEnd and only encodes: where an entry's home
// is, and the instructions of each operation, through the hooks below.
#pragma once
#include "base/result.hpp"
#include "bytecode/compiler.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace tpagent::arch::jit {

// A stack entry during translation: a compile-time constant, or in its home.
struct Slot {
    bool is_const = false;
    std::uint64_t k = 0;
};

// A branch whose target is filled in later: where it is in the code, and the backend's kind
// of branch there (how its displacement is encoded).
struct BranchSite {
    std::size_t at = 0;
    unsigned kind = 0;
};

// A branch to the failure exits: the bytecode offset to report and the status (nullopt: the
// status the helper just called returned).
struct FailExit {
    BranchSite site;
    std::uint32_t offset = 0;
    std::optional<bytecode::EvalStatus> fixed;
};

// An argument of a helper call: none, an immediate, or a stack entry.
struct HelperArg {
    enum class Kind { None, Immediate, Entry };
    Kind kind = Kind::None;
    std::uint64_t value = 0; // the immediate, or the entry's index
};

// A call of one of the rt:: helpers: helper(ctx, out, a, b).
struct HelperCall {
    std::uint64_t helper = 0;
    HelperArg a, b;
    unsigned survivors = 0;     // the entries below this one that live on after the call
    std::uint32_t offset = 0;   // the instruction's, for a failure
    bool pushes_result = false; // the value it returns becomes a new entry
};

// Scratch registers by role; each backend maps them to registers of its own.
enum Scratch : unsigned { kScratch0, kScratch1, kScratch2 };

// The two-operand opcodes (one result from two entries).
bool is_binary(bytecode::Op op);
// Division and remainder (two entries, and a check for a zero divisor).
bool is_divrem(bytecode::Op op);

// Fails with ErrorCode::Unsupported for a program with a reachable printf when the helpers
// have none, and with NotAllowed when `formats` is given but not for each format.
Status check_helpers(const bytecode::Program& program, const bytecode::HelperAddresses& helpers,
                     const bytecode::FormatAddresses& formats);

class FrontEnd {
  public:
    FrontEnd(const FrontEnd&) = delete;
    FrontEnd& operator=(const FrontEnd&) = delete;
    // The program's machine code.
    std::vector<std::uint8_t> run();

  protected:
    FrontEnd(const bytecode::Program& program, const bytecode::HelperAddresses& helpers,
             const bytecode::StagedRegisterLayout& staged, const bytecode::FormatAddresses& formats)
        : program_(program), helpers_(helpers), staged_(staged), formats_(formats) {}
    virtual ~FrontEnd() = default;

    // --- for the backends ---
    const bytecode::Program& program() const { return program_; }
    const bytecode::HelperAddresses& helpers() const { return helpers_; }
    // What printf's code passes the helper as the format of Program::formats()[index].
    std::uint64_t format_address(std::uint64_t index) const {
        return formats_.empty() ? reinterpret_cast<std::uintptr_t>(&program_.formats()[index])
                                : formats_[index];
    }
    std::vector<Slot>& stack() { return vs_; }
    const std::vector<Slot>& stack() const { return vs_; }
    unsigned depth() const { return static_cast<unsigned>(vs_.size()); }
    // How many entries do not fit in `reg_homes` registers (the frame's entry slots).
    unsigned mem_slots(unsigned reg_homes) const;
    void push(unsigned scratch) {
        vs_.emplace_back();
        store_entry(depth() - 1, scratch);
    }
    // Whether insns[index+1 .. index+n] can only be entered from insns[index].
    bool fusible(std::uint32_t index, std::uint32_t n) const;
    void add_fail(BranchSite site, std::uint32_t offset,
                  std::optional<bytecode::EvalStatus> fixed) {
        fails_.push_back({site, offset, fixed});
    }
    void fail_always(std::uint32_t offset, bytecode::EvalStatus status) {
        add_fail(emit_jump(), offset, status);
    }
    void patch_here(BranchSite site) { patch(site, code_size()); }
    // Every entry in its home.
    void flush();

    // --- the hooks ---
    // Saves what the body uses, makes room for the frame, sets the loop budget.
    virtual void emit_prologue(bool has_backward) = 0;
    virtual void load_entry(unsigned i, unsigned scratch) = 0;
    // Entry i is no longer a constant: it is what `scratch` holds.
    virtual void store_entry(unsigned i, unsigned scratch) = 0;
    // Writes entry i to its home if it is a constant.
    virtual void materialize(unsigned i) = 0;
    // Writes what the backend holds only in registers to the entries' homes (flush's first step).
    virtual void settle() {}
    // Called before each instruction, and at each label (where no register holds an entry).
    virtual void before_insn(const bytecode::Insn& /*insn*/) {}
    virtual void at_label() {}
    // A backend's own translation of insns[index] with the instructions after it; returns how
    // many following instructions it covered, or nullopt where it has none.
    virtual std::optional<std::uint32_t> translate_fused(std::uint32_t /*index*/) {
        return std::nullopt;
    }
    // The five below leave their result in kScratch0, which the front end stores. Their
    // operands are the top entries, not all constants.
    virtual void emit_binary(bytecode::Op op) = 0;
    virtual void emit_divrem(const bytecode::Insn& insn) = 0; // the divisor is no constant 0
    virtual void emit_not(bytecode::Op op) = 0;
    virtual void emit_extend(bytecode::Op op, unsigned bits) = 0; // 0 < bits < 64
    virtual void emit_ref(const bytecode::Insn& insn) = 0;
    // `reg` of a staged register: the load from the block Context::registers points to.
    virtual void emit_load_staged(const bytecode::StagedRegister& staged) = 0;
    // Calls the helper and checks its status; pushes its result if asked to.
    virtual void emit_call(const HelperCall& call) = 0;
    // Calls printf with its arguments and checks its status; the front end pops them.
    virtual void emit_printf(const bytecode::Insn& insn) = 0;
    // Stores the top entry as the value and returns success.
    virtual void emit_return() = 0;
    // Spends one unit of the loop budget, failing with StepLimit when there is none left.
    virtual void emit_spend_budget(std::uint32_t offset) = 0;
    virtual std::size_t code_size() const = 0;
    virtual BranchSite emit_jump() = 0;
    // A branch taken when entry i (in its home) is non-zero, or zero.
    virtual BranchSite emit_branch_if(unsigned i, bool nonzero) = 0;
    virtual void patch(BranchSite site, std::size_t to) = 0;
    // Out-of-line code after the body, before the failure exits.
    virtual void emit_slow_paths() {}
    // A failure exit's status and offset, where the shared tail expects them.
    virtual void emit_fail_status(const FailExit& fail) = 0;
    // The shared tail of the failure exits (`reached`: some exit jumps to it).
    virtual void emit_fail_tail(bool reached) = 0;
    virtual std::vector<std::uint8_t> take_code() = 0;

  private:
    struct Jump {
        BranchSite site;
        std::uint32_t target;
    };

    // Emits insns[index]; returns how many following instructions it also covered.
    std::uint32_t translate(std::uint32_t index);
    void binary(const bytecode::Insn& insn);
    void divrem(const bytecode::Insn& insn);
    void unary(const bytecode::Insn& insn);
    void extend(const bytecode::Insn& insn);
    void permute(const bytecode::Insn& insn);
    void helper_call(const bytecode::Insn& insn);
    void if_goto(const bytecode::Insn& insn, std::uint32_t index);
    void jump_to(std::uint32_t target, std::uint32_t offset, std::uint32_t index);
    void emit_fail_exits();

    const bytecode::Program& program_;
    const bytecode::HelperAddresses helpers_;
    const bytecode::StagedRegisterLayout staged_;
    const bytecode::FormatAddresses formats_;
    std::vector<Slot> vs_;
    std::vector<FailExit> fails_;
    std::vector<Jump> jumps_;
    std::vector<std::size_t> labels_;
    std::vector<bool> is_target_; // per instruction: some jump lands on it
    bool dead_ = false;           // no path reaches the current position
};

// A compiler backend whose translation is a run of one Translator (a FrontEnd).
template <typename Translator> class Backend final : public bytecode::CompilerBackend {
  public:
    explicit Backend(const char* name) : name_(name) {}
    const char* name() const override { return name_; }
    using CompilerBackend::translate;
    Result<std::vector<std::uint8_t>>
    translate(const bytecode::Program& program, const bytecode::HelperAddresses& helpers,
              const bytecode::StagedRegisterLayout& staged,
              const bytecode::FormatAddresses& formats) const override {
        if (Status checked = check_helpers(program, helpers, formats); !checked)
            return checked.error();
        return Translator(program, helpers, staged, formats).run();
    }

  private:
    const char* name_;
};

} // namespace tpagent::arch::jit
