// size_t tpagent_fault_recovering_copy(void* dst, const void* src, size_t len)
//
// The in-process agent's copy of program memory that tpagent listed as readable. The mapping
// may have gone since (munmap, mprotect): the fault then stops the thread in tpagent first
// (it is ptraced), and tpagent, seeing the pc at tpagent_copy_begin, moves it to
// tpagent_copy_fault instead of delivering the signal. `rep movsb` faults restartably, with
// rcx holding the bytes not yet copied, so the fault path returns how many were.
    .text
    .globl tpagent_fault_recovering_copy
    .hidden tpagent_fault_recovering_copy
    .type tpagent_fault_recovering_copy, @function
    .globl tpagent_copy_begin, tpagent_copy_end, tpagent_copy_fault
    .hidden tpagent_copy_begin, tpagent_copy_end, tpagent_copy_fault
tpagent_fault_recovering_copy:
    .cfi_startproc
    mov %rdx, %rcx
    cld
tpagent_copy_begin:
    rep movsb
tpagent_copy_end:
    mov %rdx, %rax
    ret
tpagent_copy_fault:
    mov %rdx, %rax
    sub %rcx, %rax
    ret
    .cfi_endproc
    .size tpagent_fault_recovering_copy, . - tpagent_fault_recovering_copy
    .section .note.GNU-stack, "", @progbits
