/* The library reloads.c loads, built once per ENTRY name (-DENTRY=...): the same code under
 * two names, but for the first instruction of the function's body (-DFIRST_INSTRUCTION=...,
 * an x86-64 instruction of no effect), where gdb puts a breakpoint on the function. */
int ENTRY(int x) {
    __asm__ volatile(FIRST_INSTRUCTION);
    return x * 10;
}
