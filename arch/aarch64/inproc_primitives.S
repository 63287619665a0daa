// The in-process agent's primitives that know the instruction set (see the x86-64 twin).
//
// long tpagent_syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6)
// A system call without the C library: returns the kernel's result (-errno on failure).
    .text
    .globl tpagent_syscall
    .hidden tpagent_syscall
    .type tpagent_syscall, %function
tpagent_syscall:
    mov x8, x0
    mov x0, x1
    mov x1, x2
    mov x2, x3
    mov x3, x4
    mov x4, x5
    mov x5, x6
    svc #0
    ret
    .size tpagent_syscall, . - tpagent_syscall

// size_t tpagent_fault_recovering_copy(void* dst, const void* src, size_t len)
// Copies byte by byte; a fault stops the thread in tpagent first (it is ptraced), which moves
// the pc from tpagent_copy_begin (the load) to tpagent_copy_fault: x3 holds the bytes copied.
    .globl tpagent_fault_recovering_copy
    .hidden tpagent_fault_recovering_copy
    .type tpagent_fault_recovering_copy, %function
    .globl tpagent_copy_begin, tpagent_copy_end, tpagent_copy_fault
    .hidden tpagent_copy_begin, tpagent_copy_end, tpagent_copy_fault
tpagent_fault_recovering_copy:
    mov x3, #0
1:  cmp x3, x2
    b.hs 2f
tpagent_copy_begin:
    ldrb w4, [x1, x3]
tpagent_copy_end:
    strb w4, [x0, x3]
    add x3, x3, #1
    b 1b
2:
tpagent_copy_fault:
    mov x0, x3
    ret
    .size tpagent_fault_recovering_copy, . - tpagent_fault_recovering_copy

// size_t tpagent_thread_registers(uint64_t* out, long by_instruction): tpidr, always by
// instruction (user mode reads it freely).
    .globl tpagent_thread_registers
    .hidden tpagent_thread_registers
    .type tpagent_thread_registers, %function
tpagent_thread_registers:
    mrs x2, tpidr_el0
    str x2, [x0]
    mov x0, #8
    ret
    .size tpagent_thread_registers, . - tpagent_thread_registers

// size_t tpagent_thread_constants(uint8_t* out): registers the same at every hit of a thread
// that the pads leave out of the staged block: none here. Returns 0.
    .globl tpagent_thread_constants
    .hidden tpagent_thread_constants
    .type tpagent_thread_constants, %function
tpagent_thread_constants:
    mov x0, #0
    ret
    .size tpagent_thread_constants, . - tpagent_thread_constants

// void tpagent_breakpoint_trap(uint64_t record): a breakpoint's condition held in the program
// (inproc/breakpoint_hit.cpp), or, with record 0, a dprintf found its ring full. tpagent
// takes the trap, the record in x0; with no tracer, the agent's SIGTRAP handler
// resumes past the brk.
    .globl tpagent_breakpoint_trap
    .hidden tpagent_breakpoint_trap
    .type tpagent_breakpoint_trap, %function
tpagent_breakpoint_trap:
    brk #0
    ret
    .size tpagent_breakpoint_trap, . - tpagent_breakpoint_trap
    .section .note.GNU-stack, "", %progbits
