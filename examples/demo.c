/* tpagent demo program: two sensor threads read values and keep running statistics of them.
 * scripts/demo.py traces it through tpagent: a trap tracepoint where a sample is added (the
 * thread stops for an instant), a fast tracepoint with a condition in the sensor loop
 * (collected inside the program by the in-process agent, no stop). */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define STEPS 40

struct stats {
    int count;
    long sum;
    int min;
    int max;
};

struct sensor {
    const char* name;
    int seed;
    struct stats stats;
};

long readings_seen;

int next_reading(const struct sensor* s, int step) {
    return (s->seed * (step + 3) * 7 + step * step) % 50;
}

void add_sample(struct stats* st, int value) {
    st->count++; /* MARK: add_sample */
    st->sum += value;
    if (value < st->min) st->min = value;
    if (value > st->max) st->max = value;
}

static void* run_sensor(void* arg) {
    struct sensor* s = arg;
    for (int step = 0; step < STEPS; step++) {
        int value = next_reading(s, step);
        __atomic_add_fetch(&readings_seen, 1, __ATOMIC_RELAXED); /* MARK: reading */
        add_sample(&s->stats, value);
        usleep(500 + 300 * s->seed);
    }
    return NULL;
}

void all_done(void) {}

int main(void) {
    struct sensor sensors[2] = {{"left", 3, {0, 0, INT_MAX, INT_MIN}},
                                {"right", 5, {0, 0, INT_MAX, INT_MIN}}};
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, run_sensor, &sensors[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    all_done();
    for (int i = 0; i < 2; i++) {
        const struct stats* st = &sensors[i].stats;
        printf("%s: count=%d sum=%ld min=%d max=%d\n", sensors[i].name, st->count, st->sum, st->min,
               st->max);
    }
    printf("readings=%ld\n", readings_seen);
    return 0;
}
