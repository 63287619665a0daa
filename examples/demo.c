/* tpagent demo program: running statistics over a few samples, kept in a struct.
 * scripts/demo.py runs it under tpagent and has gdb look inside while it works. */
#include <limits.h>
#include <stdio.h>

struct stats {
    int count;
    long sum;
    int min;
    int max;
};

static void add_sample(struct stats* s, int value) {
    s->count++;
    s->sum += value;
    if (value < s->min) s->min = value;
    if (value > s->max) s->max = value;
}

int main(void) {
    const int samples[] = {12, 7, 31, 4, 19, 25};
    struct stats s = {0, 0, INT_MAX, INT_MIN};

    for (unsigned i = 0; i < sizeof samples / sizeof samples[0]; i++)
        add_sample(&s, samples[i]);

    printf("count=%d sum=%ld min=%d max=%d mean=%.2f\n", s.count, s.sum, s.min, s.max,
           (double)s.sum / s.count);
    return 0;
}
