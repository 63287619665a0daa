/* LTTng-UST tracepoint provider of ftrace_loop.c built with -DFTRACE_LOOP_LTTNG (the LTTng
 * anchor of bench/lttng_anchor.py): tpagent_bench:hit records about what the "$regs + 64 B" row
 * of bench/ftrace.py collects, 18 longs (a register dump's worth) and the 64 bytes of `buf`.
 * ftrace_loop.c defines the probes itself (TRACEPOINT_DEFINE + TRACEPOINT_CREATE_PROBES), so
 *   cc -DFTRACE_LOOP_LTTNG -I bench/programs ... bench/programs/ftrace_loop.c -llttng-ust -ldl
 * builds it; -I names this folder, where lttng/tracepoint-event.h finds TRACEPOINT_INCLUDE. */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER tpagent_bench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./ftrace_loop_lttng.h"

#if !defined(FTRACE_LOOP_LTTNG_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define FTRACE_LOOP_LTTNG_H

#include <lttng/tracepoint.h>

TRACEPOINT_EVENT(
    tpagent_bench, hit, TP_ARGS(long, n, long, counter, const char*, mem),
    TP_FIELDS(
        ctf_integer(long, n, n) ctf_integer(long, counter, counter) ctf_integer(long, r2, n + 1)
            ctf_integer(long, r3, n + 2) ctf_integer(long, r4, n + 3) ctf_integer(long, r5, n + 4)
                ctf_integer(long, r6, n + 5) ctf_integer(long, r7, n + 6)
                    ctf_integer(long, r8, n + 7) ctf_integer(long, r9, n + 8)
                        ctf_integer(long, r10, n + 9) ctf_integer(long, r11, n + 10)
                            ctf_integer(long, r12, n + 11) ctf_integer(long, r13, n + 12)
                                ctf_integer(long, r14, n + 13) ctf_integer(long, r15, n + 14)
                                    ctf_integer(long, r16, n + 15) ctf_integer(long, r17, n + 16)
                                        ctf_array(char, mem, mem, 64)))

#endif /* FTRACE_LOOP_LTTNG_H */

#include <lttng/tracepoint-event.h>
