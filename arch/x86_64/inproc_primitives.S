// The in-process agent's two primitives that know the instruction set. Both keep every
// instruction a collecting thread runs inside the library, where tpagent can tell a thread it
// stopped is collecting (and step it out before gdb sees it).
//
// long tpagent_syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6)
// A system call without the C library: returns the kernel's result (-errno on failure).
    .text
    .globl tpagent_syscall
    .hidden tpagent_syscall
    .type tpagent_syscall, @function
tpagent_syscall:
    .cfi_startproc
    mov %rdi, %rax
    mov %rsi, %rdi
    mov %rdx, %rsi
    mov %rcx, %rdx
    mov %r8, %r10
    mov %r9, %r8
    mov 8(%rsp), %r9
    syscall
    ret
    .cfi_endproc
    .size tpagent_syscall, . - tpagent_syscall

// size_t tpagent_fault_recovering_copy(void* dst, const void* src, size_t len)
//
// The in-process agent's copy of program memory that tpagent listed as readable. The mapping
// may have gone since (munmap, mprotect): the fault then stops the thread in tpagent first
// (it is ptraced), and tpagent, seeing the pc between tpagent_copy_begin and tpagent_copy_end,
// moves it to tpagent_copy_fault instead of delivering the signal. Throughout, rcx holds the
// bytes not yet copied (`rep movsb` faults restartably with rcx so; the loop for short copies,
// which `rep movsb`'s start-up would dominate, keeps it so by hand: a step loads all its words
// before it stores any), so the fault path returns how many were.
    .globl tpagent_fault_recovering_copy
    .hidden tpagent_fault_recovering_copy
    .type tpagent_fault_recovering_copy, @function
    .globl tpagent_copy_begin, tpagent_copy_end, tpagent_copy_fault
    .hidden tpagent_copy_begin, tpagent_copy_end, tpagent_copy_fault
tpagent_fault_recovering_copy:
    .cfi_startproc
    mov %rdx, %rcx
    // no cld: the pad called the collector with DF clear, and the ABI keeps it so
tpagent_copy_begin:
    cmp $256, %rcx
    jae 3f
5:  cmp $32, %rcx // 32 bytes a step: four loads, then four stores
    jb 1f
    mov (%rsi), %rax
    mov 8(%rsi), %r8
    mov 16(%rsi), %r9
    mov 24(%rsi), %r10
    mov %rax, (%rdi)
    mov %r8, 8(%rdi)
    mov %r9, 16(%rdi)
    mov %r10, 24(%rdi)
    add $32, %rsi
    add $32, %rdi
    sub $32, %rcx
    jmp 5b
1:  cmp $8, %rcx
    jb 2f
    mov (%rsi), %rax
    mov %rax, (%rdi)
    add $8, %rsi
    add $8, %rdi
    sub $8, %rcx
    jmp 1b
2:  test %rcx, %rcx
    jz 4f
    movb (%rsi), %al
    movb %al, (%rdi)
    inc %rsi
    inc %rdi
    dec %rcx
    jmp 2b
3:  rep movsb
tpagent_copy_end:
4:  mov %rdx, %rax
    ret
tpagent_copy_fault:
    mov %rdx, %rax
    sub %rcx, %rax
    ret
    .cfi_endproc
    .size tpagent_fault_recovering_copy, . - tpagent_fault_recovering_copy

// size_t tpagent_thread_registers(uint64_t* out, long by_instruction)
// fs_base and gs_base (gdb's order): by rdfsbase/rdgsbase, which fault unless the kernel
// enabled them (tpagent tells), or by arch_prctl. Never through %fs:0, which a program that
// set its own fs base may not have mapped.
    .globl tpagent_thread_registers
    .hidden tpagent_thread_registers
    .type tpagent_thread_registers, @function
tpagent_thread_registers:
    .cfi_startproc
    test %rsi, %rsi
    jz 1f
    rdfsbase %rax
    mov %rax, (%rdi)
    rdgsbase %rax
    mov %rax, 8(%rdi)
    mov $16, %eax
    ret
1:  mov %rdi, %rsi       // arch_prctl(ARCH_GET_FS, out); rsi survives the system call
    mov $0x1003, %edi
    mov $158, %eax
    syscall
    add $8, %rsi         // arch_prctl(ARCH_GET_GS, out + 1)
    mov $0x1004, %edi
    mov $158, %eax
    syscall
    mov $16, %eax
    ret
    .cfi_endproc
    .size tpagent_thread_registers, . - tpagent_thread_registers

// size_t tpagent_thread_constants(uint8_t* out): the registers the jump pads leave out of
// the staged block as the same at every hit of a thread (arch::FastBlockCompletion): the
// segment selectors cs, ss, ds, es, fs, gs, 4 bytes each, in gdb's order. Returns 24.
    .globl tpagent_thread_constants
    .hidden tpagent_thread_constants
    .type tpagent_thread_constants, @function
    .macro store_selector sreg, offset
    mov %\sreg, %eax
    mov %eax, \offset(%rdi)
    .endm
tpagent_thread_constants:
    .cfi_startproc
    store_selector cs, 0
    store_selector ss, 4
    store_selector ds, 8
    store_selector es, 12
    store_selector fs, 16
    store_selector gs, 20
    mov $24, %eax
    ret
    .cfi_endproc
    .size tpagent_thread_constants, . - tpagent_thread_constants
// void tpagent_breakpoint_trap(uint64_t record): a breakpoint's condition held in the program
// (inproc/breakpoint_hit.cpp), or, with record 0, a dprintf found its ring full. tpagent
// takes the trap, the record in rdi; with no tracer, the agent's SIGTRAP handler
// returns past the int3.
    .globl tpagent_breakpoint_trap
    .hidden tpagent_breakpoint_trap
    .type tpagent_breakpoint_trap, @function
tpagent_breakpoint_trap:
    .cfi_startproc
    int3
    ret
    .cfi_endproc
    .size tpagent_breakpoint_trap, . - tpagent_breakpoint_trap

// void tpagent_signal_return(void): the restorer of the in-process agent's signal handler
// (inproc/orphan_traps.cpp), where the handler returns: rt_sigreturn.
    .globl tpagent_signal_return
    .hidden tpagent_signal_return
    .type tpagent_signal_return, @function
tpagent_signal_return:
    mov $15, %eax
    syscall
    .size tpagent_signal_return, . - tpagent_signal_return
    .section .note.GNU-stack, "", @progbits
