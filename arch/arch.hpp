// The one interface through which the rest of tpagent learns about an instruction set.
// Each ISA (arch/x86_64/, arch/aarch64/) implements Architecture; host_architecture() is the
// one this build runs on.
#pragma once
#include "arch/control_flow.hpp"
#include "arch/code_references.hpp"
#include "arch/relocation.hpp"
#include "arch/sdt_arguments.hpp"
#include "base/result.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace tpagent::arch {

// One register as gdb numbers it: the position in registers() is the gdb regnum,
// and the `g` packet is every register in that order at g_offset.
struct RegisterDesc {
    const char* name;
    std::uint32_t size;     // bytes
    std::uint32_t g_offset; // byte offset in the `g` block
};

// Everything ptrace gives for one thread's registers, in the kernel's regset layouts.
struct RegisterSnapshot {
    std::vector<std::uint8_t> gpr;    // NT_PRSTATUS payload (x86-64: user_regs_struct)
    std::vector<std::uint8_t> xstate; // x86-64: NT_X86_XSTATE (or NT_PRFPREG's 512 bytes)
};

// Where the in-process agent keeps what a hit needs (offsets in its structures), for pads that
// collect in line (InlineCollection). Filled by who knows the agent's layout (experiment/).
struct InlineAgentLayout {
    std::uint64_t header = 0;      // the shared buffer's header, in the program
    std::uint64_t forked_flag = 0; // a byte, nonzero in a forked child: the collector's
    // The thread's state, from the thread pointer (x86-64: fs); or, where that is 0, in a
    // table of entries keyed by the thread pointer (the self-mapped image's: entry
    // (tp * 0x9e3779b97f4a7c15) >> (64 - bits), its key the first 8 bytes, the state at
    // thread_entry_state).
    std::int32_t thread_state = 0;
    std::uint64_t thread_table = 0;
    std::uint32_t thread_table_bits = 0, thread_entry_bytes = 0, thread_entry_state = 0;
    // In the header.
    std::uint32_t generation = 0, chunk_bytes = 0, circular = 0, ranges_sequence = 0,
                  dropped_frames = 0;
    // In a tracepoint record.
    std::uint32_t record_enabled = 0, record_next = 0;
    // In the thread's state.
    std::uint32_t busy = 0, slot_generation = 0, counters = 0, chunk = 0, linear_credit = 0,
                  tail_bytes = 0, tail_registers = 0, thread_constants = 0, last_range_sequence = 0,
                  last_range_start = 0, last_range_end = 0;
    // In a chunk's header, and its size.
    std::uint32_t chunk_committed = 0, chunk_frames = 0, chunk_header_bytes = 0;
    // A compiled condition's arguments (bytecode::Context, EvalOut): their sizes, where the
    // context's register block pointer and the result's value are.
    std::uint32_t context_bytes = 0, context_registers = 0, out_bytes = 0, out_value = 0;

    bool operator==(const InlineAgentLayout&) const = default;
};

// A fast tracepoint whose pad writes its frame itself (arch/<isa>/inline_collection): the
// frame's shape decided once, when the pad is made, for a tracepoint with no condition, no
// pass count and only `$regs` and memory ranges to collect. The pad falls back to the agent's
// collector for whatever its code does not cover (another record at the address, a thread
// that has not joined the run, a full chunk, a range outside the thread's last readable one).
// The record: [size | index << 32][pc][stamp][frame_header: 6 bytes] then the blocks at the
// offsets given: `R` + the core then tail_bytes of the thread's tail registers; each range
// `M` + 8-byte address + 2-byte length + the bytes.
struct InlineCollection {
    struct Range {
        int base_regnum = -1; // gdb regnum of a general register, or -1: absolute
        std::uint64_t offset = 0;
        std::uint32_t length = 0;
        std::uint32_t at = 0; // offset in the record of its `M`
        bool operator==(const Range&) const = default;
    };
    InlineAgentLayout agent;
    std::uint64_t record = 0;       // the tracepoint's record in the program
    std::uint32_t size = 0;         // the record's bytes, a multiple of 8
    std::uint64_t first_word = 0;   // its first 8 bytes: size | index << 32
    std::uint64_t frame_header = 0; // 6 bytes, at 24
    std::uint32_t counter = 0;      // offset of its hits (then bytes) in the thread's row
    std::uint32_t registers_at = 0; // offset of the `R` block; 0: none
    std::uint32_t core_bytes = 0, tail_bytes = 0;
    std::vector<Range> ranges;
    std::uint8_t registers_tag = 'R', memory_tag = 'M';
    // A condition compiled for staged registers (bytecode::CompiledFn at `condition`) that
    // reads nothing but the general registers and the pc (gdb regnums `condition_registers`):
    // called with a block holding just those, before anything else; a hit it rejects is not
    // counted, one whose evaluation fails is the agent's collector's. 0: none.
    std::uint64_t condition = 0;
    std::vector<int> condition_registers;

    bool operator==(const InlineCollection&) const = default;
};

// What a fast tracepoint's pad saves, from what its tracepoints collect.
struct FastPadOptions {
    // false: the collector uses general registers only; the pad saves no FP/vector state and
    // the block holds only the core registers (fast_block_bytes()).
    bool save_vector_state = true;
    // true: the pad stores the whole core itself, what it otherwise leaves to the collector
    // (fast_block_completion()): cheaper for tracepoints that collect `$regs`.
    bool stage_full_core = false;
    // true: the pad also saves the FP/vector state where the collector finds it
    // (Architecture::fast_saved_state()), for tracepoints that collect FP/vector registers.
    bool stage_vector_state = false;
    // Nonzero: a 4-byte flag in the program (the agent's `tracing`); while it is 0 the pad
    // runs only the displaced instructions.
    std::uint64_t gate = 0;
    // The tracepoint's frame written by the pad itself, where the architecture can.
    std::optional<InlineCollection> inline_collection;

    bool operator==(const FastPadOptions&) const = default;
};

// Stacks the pads run on instead of the thread's own, for programs whose threads run on stacks
// too small to take a pad and its collector (Go's goroutine stacks: a few KB, no red zone,
// anything below the stack pointer may be another goroutine's). A pool tpagent maps in the
// program: at `pool` the bytes handed out so far (8, atomic), then the hits not collected for
// want of a stack (8); the stacks, `stack_bytes` each, from pool + kAgentStackHeaderBytes. A
// thread takes one at its first hit and keeps it; which one is in 8-byte words free in every
// thread of the program: at `thread_slots` from its thread pointer (x86-64: fs), or (arm64, where
// a Go program leaves tpidr_el0 alone) at `thread_slots` into the M that the goroutine in x28
// points to at `goroutine_m` (Go's m.tls array, unused there).
struct AgentStacks {
    std::uint64_t pool = 0; // 0: pads run on the thread's stack
    std::uint64_t pool_bytes = 0;
    std::uint32_t stack_bytes = 0;
    std::int32_t thread_slots = 0;
    std::int32_t goroutine_m = 0;
};
inline constexpr std::uint64_t kAgentStackHeaderBytes = 4096;

// A fast tracepoint's jump pad: what to build and what comes out (see arch/<isa>/jump_pad).
struct JumpPadRequest {
    std::uint64_t pad_address = 0;        // where EmittedJumpPad::code goes
    std::uint64_t tracepoint_address = 0; // where EmittedJumpPad::patch goes
    std::uint64_t collector = 0;          // called as collector(argument, block, frame, anchor)
    std::uint64_t argument = 0;
    std::span<const std::uint8_t> original_code; // bytes at tracepoint_address (>= 20)
    FastPadOptions options;
    AgentStacks agent_stacks; // with a pool: options.stage_full_core too
    // Bytes the displaced instructions must cover: 0, the jump's own length; a short jump's
    // (Architecture::short_jump_length) when the jump to the pad goes in a slot nearby, and
    // EmittedJumpPad::patch is then the caller's to make.
    std::size_t displaced_minimum = 0;
    // The code is in a branch-target-guarded mapping (arm64 BTI): a landing pad there must
    // stay (an indirect branch onto the jump would fault). Looked up only for code that
    // starts with a landing pad (Architecture::branch_target_landing_pad).
    bool branch_target_guarded = false;
};
// Where a pad copies program memory in line: a fault with the pc in [begin, end) goes on at
// `fault` instead of reaching the program (offsets in the pad's code).
struct PadCopyRange {
    std::size_t begin = 0, end = 0, fault = 0;
};
struct EmittedJumpPad {
    std::vector<std::uint8_t> code; // pad code, then the relocated instructions at relocated_offset
    std::size_t relocated_offset = 0;
    Relocated relocated;             // pad offsets relative to relocated_offset
    std::vector<std::uint8_t> patch; // for tracepoint_address: the jump, then filler
    std::optional<PadCopyRange> copy;
};

enum class WatchKind { Write = 2, Read = 3, Access = 4 }; // Z2, Z3, Z4

class Architecture {
  public:
    virtual ~Architecture() = default;

    // Registers in gdb order and the total `g` size (bytes).
    virtual std::span<const RegisterDesc> registers() const = 0;
    virtual std::size_t g_size() const = 0;
    // gdb regnums expedited in T stop replies (fp, sp, pc).
    virtual std::span<const int> expedited_registers() const = 0;
    virtual int pc_regnum() const = 0;

    // qXfer:features:read annexes: "target.xml" and whatever it includes. nullopt: no such annex.
    virtual std::optional<std::string> feature_xml(std::string_view annex) const = 0;

    // ptrace access to a stopped thread.
    virtual Status read_snapshot(pid_t tid, RegisterSnapshot& out) const = 0;
    // Reads only the general registers (gpr); xstate is left as it was.
    virtual Status read_general_registers(pid_t tid, RegisterSnapshot& out) const = 0;
    virtual Status write_snapshot(pid_t tid, const RegisterSnapshot& in) const = 0;
    // Writes only the general registers (pc, sp, ...): the cheap write for moving a pc.
    virtual Status write_general_registers(pid_t tid, const RegisterSnapshot& in) const = 0;

    // Conversion between the kernel layout and gdb's `g` block.
    // available[i] is false for registers the snapshot does not hold (sent as `xx`).
    virtual void snapshot_to_g(const RegisterSnapshot& s, std::span<std::uint8_t> g,
                               std::vector<bool>& available) const = 0;
    // Overwrites in `s` the registers whose bytes are in g (all of them).
    virtual void g_to_snapshot(std::span<const std::uint8_t> g, RegisterSnapshot& s) const = 0;

    virtual std::uint64_t pc(const RegisterSnapshot& s) const = 0;
    virtual void set_pc(RegisterSnapshot& s, std::uint64_t pc) const = 0;
    virtual std::uint64_t sp(const RegisterSnapshot& s) const = 0;

    // Software breakpoint instruction, and the pc the CPU reports after executing it at `addr`.
    virtual std::span<const std::uint8_t> breakpoint_instruction() const = 0;
    virtual std::uint64_t pc_after_breakpoint(std::uint64_t addr) const = 0;

    // The longest instruction there is: code read for relocation covers whole instructions.
    virtual std::size_t max_instruction_bytes() const = 0;
    // The instruction at the start of `code` (at `addr`) as a branch recorder sees it.
    virtual Result<FlowInstruction> decode_flow(std::span<const std::uint8_t> code,
                                                std::uint64_t addr) const = 0;
    // Out-of-line execution: the whole instructions at `from` covering at least `min_bytes`,
    // rewritten to run from a pad at `to` and jump back. `code` holds the original bytes.
    virtual Result<Relocated> relocate(std::span<const std::uint8_t> code, std::uint64_t from,
                                       std::uint64_t to, std::size_t min_bytes) const = 0;
    // How far a pad may be from the code it serves (rel32 on x86-64).
    virtual std::uint64_t pad_reach() const = 0;
    // The end of a process's address space: pads are mapped below it.
    virtual std::uint64_t user_address_top() const = 0;

    // Fast tracepoints: the shortest instruction span the jump needs (qTMinFTPILen), the
    // bytes of the `g` block a pad fills when it saves no vector state (registers beyond are
    // unavailable in such frames), and the pad itself.
    virtual bool supports_fast_tracepoints() const { return true; }
    virtual std::size_t min_fast_tracepoint_length() const = 0;
    // What gdb is told (qTMinFTPILen) is the shortest instruction a fast tracepoint may be at.
    // x86-64 answers 1: at a shorter instruction than the jump, the jump also displaces the
    // instructions after it where nothing else reaches them (displacement_hazard, and the
    // module's branch targets from sweep_code_references); elsewhere the tracepoint is
    // collected through a trap.
    virtual std::size_t fast_tracepoint_instruction_minimum() const {
        return min_fast_tracepoint_length();
    }
    // Whether pads can run on agent stacks (AgentStacks), found through words at an offset
    // from the thread pointer that the pad addresses directly (x86-64: fs), or in the M of
    // the goroutine in the g register (arm64: agent_stacks_in_goroutine_m).
    virtual bool pads_on_agent_stacks() const { return false; }
    virtual bool agent_stacks_in_goroutine_m() const { return false; }
    virtual void sweep_code_references(std::span<const std::uint8_t> code, std::uint64_t addr,
                                       CodeReferences& out) const {
        (void)code, (void)addr, (void)out;
    }
    // Why the instructions `relocated` displaces from `code` (at `addr`) cannot all move as
    // far as they themselves tell (one transfers control before the last), or nullopt.
    virtual std::optional<std::string> displacement_hazard(std::span<const std::uint8_t> code,
                                                           std::uint64_t addr,
                                                           const Relocated& relocated) const {
        (void)code, (void)addr, (void)relocated;
        return std::nullopt;
    }
    // A call among them before the last (its callee returns into the pad), or nullopt.
    virtual std::optional<std::string> displaced_call(std::span<const std::uint8_t> code,
                                                      std::uint64_t addr,
                                                      const Relocated& relocated) const {
        (void)code, (void)addr, (void)relocated;
        return std::nullopt;
    }
    virtual std::size_t fast_block_bytes() const = 0;
    // The registers the in-process agent appends to that block, each thread's own and outside
    // the pad's reach (x86-64: fs_base and gs_base, for TLS in tfind), adjacent in `g`; and
    // whether it may read them by instruction (else by system call). It reads them once per
    // thread and run: a thread that moves its own TLS base during a run is not followed.
    struct FastBlockTail {
        std::vector<int> regnums;
        bool by_instruction = false;
        // Registers just before those in `g` that are the same in every thread of a process
        // all its life (arm64: the pointer-authentication masks, for unwinding signed return
        // addresses in tfind): tpagent reads them at tstart, the collector copies them.
        std::vector<int> constant_regnums;
    };
    virtual FastBlockTail fast_block_tail() const { return {}; }
    // What the pad leaves out of that block for the collector to fill in, only when a hit
    // reads registers (its stores are most of a pad's cost): the pc (the tracepoint address),
    // the stack pointer and flags, found from the anchor the pad passes (4th argument of the
    // collector call: sp = anchor + sp_bias, the flags at the anchor), and registers that are
    // the same at every hit of a thread, which tpagent_thread_constants writes (x86-64: the
    // segment selectors). Offsets into `g`; a size of 0 leaves that part to the pad.
    struct FastBlockCompletion {
        std::uint32_t pc_offset = 0, pc_size = 0;
        std::uint32_t sp_offset = 0, sp_size = 0;
        std::int32_t sp_bias = 0;
        std::uint32_t flags_offset = 0, flags_size = 0;
        std::uint32_t constants_offset = 0, constants_size = 0;
    };
    virtual FastBlockCompletion fast_block_completion() const { return {}; }
    // The FP/vector state a pad saves with FastPadOptions::stage_vector_state: its bytes, and
    // where it starts relative to the collector's `frame` argument; it ends at or below the
    // register block the pad passes (the collector's test that it is there). 0 bytes: pads
    // cannot.
    struct FastSavedState {
        std::uint32_t bytes = 0;
        std::int32_t frame_offset = 0;
    };
    virtual FastSavedState fast_saved_state() const { return {}; }
    // Writes into g the registers such a saved state holds (fast_saved_state().bytes of it),
    // and only those, marking them in `placed` (sized to registers()).
    virtual void fast_saved_state_to_g(std::span<const std::uint8_t> state,
                                       std::span<std::uint8_t> g, std::vector<bool>& placed) const {
        (void)state, (void)g, (void)placed;
    }
    // The registers such a state can hold, whatever its values, per regnum (one state may
    // hold fewer: arm64's, of a thread in streaming mode); by default what a state at rest
    // (all zero bytes) holds.
    virtual std::vector<bool> fast_saved_state_registers() const {
        std::vector<std::uint8_t> rest(fast_saved_state().bytes), g(g_size());
        std::vector<bool> placed;
        fast_saved_state_to_g(rest, g, placed);
        placed.resize(registers().size(), false);
        return placed;
    }
    virtual Result<EmittedJumpPad> emit_jump_pad(const JumpPadRequest& request) const = 0;
    // Whether emit_jump_pad makes pads that write their frames themselves
    // (FastPadOptions::inline_collection). Every architecture's pads take a gate
    // (FastPadOptions::gate) where they do not run on agent stacks.
    virtual bool collects_in_line() const { return false; }
    // Whether `code` starts with an instruction indirect branches may have to land on where
    // the mapping is branch-target guarded (arm64 BTI); the jump must not replace one there.
    virtual bool branch_target_landing_pad(std::span<const std::uint8_t>) const { return false; }
    // Why stopping or leaving the code at `address` (a trap, a jump to a pad) would change
    // what the program does, or nullopt: arm64, inside a load-exclusive/store-exclusive
    // sequence. `stepped`: the instruction there is single-stepped (a trap stepped over in
    // place), which also stops right after it. `before` is up to interruption_window() bytes
    // just before the address, `from` up to as many from it; none are read where the window
    // is 0.
    virtual std::size_t interruption_window() const { return 0; }
    virtual std::optional<std::string> interruption_hazard(std::uint64_t address,
                                                           std::span<const std::uint8_t> before,
                                                           std::span<const std::uint8_t> from,
                                                           bool stepped) const {
        (void)address, (void)before, (void)from, (void)stepped;
        return std::nullopt;
    }
    // For pads whose displaced instructions another relocator writes (gdb, qRelocInsn): the
    // jump at `from` back to `to`, and the absolute addresses the pc-relative operands of the
    // whole instructions in `code` (at `address`) reach, in order (branch targets, pc-relative
    // memory), to check that relocated code reaches what the original did. Unsupported when
    // `to` is out of reach or `code` is not whole instructions.
    virtual Result<std::vector<std::uint8_t>> encode_pad_jump(std::uint64_t from,
                                                              std::uint64_t to) const = 0;
    // Where the jump to a pad does not fit: a short jump at the tracepoint to a slot nearby
    // that holds the jump to the pad, in bytes the program never runs. Its length (0: none),
    // how far it reaches either way from its end, its encoding, and whether bytes are such
    // padding (x86-64: jmp rel8, int3 filler between functions).
    virtual std::size_t short_jump_length() const { return 0; }
    virtual std::int64_t short_jump_reach() const { return 0; }
    virtual Result<std::vector<std::uint8_t>> encode_short_jump(std::uint64_t from,
                                                                std::uint64_t to) const {
        (void)from, (void)to;
        return make_error(ErrorCode::Unsupported, "no short jump on this architecture");
    }
    virtual bool never_runs(std::span<const std::uint8_t> bytes) const {
        (void)bytes;
        return false;
    }
    // Whether gdb can relocate this ISA's instructions (qRelocInsn): gdb 13 implements it for
    // x86 only, and asserts (an internal error) when asked for another.
    virtual bool gdb_relocates_instructions() const { return true; }
    virtual Result<std::vector<std::uint64_t>>
    pc_relative_targets(std::span<const std::uint8_t> code, std::uint64_t address) const = 0;

    // An SDT marker argument's operand, the part after "N@" ("%eax", "-16(%rbp)", "[sp, 8]"):
    // Kind::Unknown where this ISA's assembler syntax is not understood. Size and sign are
    // the caller's (parse_sdt_arguments).
    virtual SdtArgument parse_sdt_operand(std::string_view operand,
                                          const SdtSymbolResolver& symbol) const = 0;

    // Running a system call in a stopped thread (to map pad memory in the inferior): the
    // instruction, placing number and arguments in a snapshot, and reading the result.
    virtual std::span<const std::uint8_t> syscall_instruction() const = 0;
    virtual void set_syscall(RegisterSnapshot& s, long number, std::span<const std::uint64_t> args,
                             std::uint64_t pc) const = 0;
    virtual std::int64_t syscall_result(const RegisterSnapshot& s) const = 0;
    // The first integer argument of a call, as the thread's registers hold it on entry (what
    // the in-process agent passes its traps).
    virtual std::uint64_t first_argument(const RegisterSnapshot& s) const = 0;
    // The system call a thread stopped inside one is making (x86-64: orig_rax; arm64: the
    // kernel's syscallno), -1 if none.
    virtual long syscall_number(const RegisterSnapshot& s) const = 0;

    // Calling a function in a stopped thread (to load the in-process agent into a program that
    // was started without it): arguments in their registers, the stack pointer at `stack`
    // (16-aligned; everything below it is free), and `return_address`, where the thread goes
    // when the function returns. Returns the bytes to store at the snapshot's stack pointer
    // (x86-64's pushed return address; none on AArch64, where it is a register). No system
    // call restart meanwhile. The result is read with call_result.
    virtual std::vector<std::uint8_t> set_call(RegisterSnapshot& s, std::uint64_t function,
                                               std::span<const std::uint64_t> args,
                                               std::uint64_t stack,
                                               std::uint64_t return_address) const = 0;
    virtual std::uint64_t call_result(const RegisterSnapshot& s) const = 0;
};

// The architecture tpagent was built for.
const Architecture& host_architecture();

} // namespace tpagent::arch
