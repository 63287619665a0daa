/* arm64 only: liba64_bti_lib.so, built -mbranch-protection=standard -nostartfiles (every input
 * BTI-marked, so the library is, and the dynamic loader maps its code branch-target guarded on
 * a CPU with BTI). called() is reached only through a pointer and starts with its landing pad
 * (bti c). */
long called(long v) {
    return v * 3 + 1; /* MARK: called_body */
}
long (*volatile through)(long) = called;

long sum_through(long n) {
    long sum = 0;
    for (long i = 0; i < n; i++)
        sum += through(i);
    return sum;
}
