/* A forking server for the trace-follow-fork tests. Usage: fork_server MODE WORKERS REQUESTS
 * [STOP_FILE].
 * - prefork: WORKERS children forked at once, each serving REQUESTS requests on its main thread
 *   and REQUESTS more on a thread of its own; the parent serves REQUESTS itself.
 * - per-request: one child forked per request, WORKERS * REQUESTS of them one after the other,
 *   each serving one request; every fifth one then execs /bin/true (it leaves the trace).
 * - forever: as per-request, one round a millisecond until STOP_FILE exists (for disconnected
 *   tracing), printing "rounds N" every 100 rounds.
 * - unmap: one child, which serves request 0, unmaps `page` (a page the parent mapped and
 *   filled with "page of the parent" before the trace), and serves request 1: a tracepoint that
 *   collects *page@16 reads memory gone in the child only.
 * serve() is the traced function: its MARK line starts with an instruction that reads a global
 * (6 bytes), long enough for a 5-byte jump, and it holds an SDT marker, fork_server:serve. main
 * calls all_served() once every child has ended: a place to stop. Each child's exit status is its
 * requests' checksum, which the parent checks; it prints "served N bad M". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sdt.h>
#include <sys/wait.h>
#include <unistd.h>

long served;
char* page;

__attribute__((noinline)) long serve(long worker, long request) {
    served++; /* MARK: serve_entry */
    STAP_PROBE2(fork_server, serve, worker, request);
    return (worker * 7 + request) & 0x7f;
}

void all_served(void) {}
void page_ready(void) {}

struct batch {
    long worker, requests, sum;
};

static void* serve_batch(void* arg) {
    struct batch* b = arg;
    for (long n = 0; n < b->requests; ++n)
        b->sum += serve(b->worker, 1000 + n);
    return NULL;
}

/* The child's exit status: its checksum, which the parent recomputes. */
static int checksum(long sum) {
    return (int)(sum & 0x7f);
}

static long expected_prefork(long worker, long requests) {
    long sum = 0;
    for (long n = 0; n < requests; ++n)
        sum += ((worker * 7 + n) & 0x7f) + ((worker * 7 + 1000 + n) & 0x7f);
    return sum;
}

static int ended_well(pid_t child, long expected) {
    int status = 0;
    if (waitpid(child, &status, 0) != child) return 0;
    return WIFEXITED(status) && WEXITSTATUS(status) == checksum(expected);
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "prefork";
    const long workers = argc > 2 ? atol(argv[2]) : 3;
    const long requests = argc > 3 ? atol(argv[3]) : 5;
    const char* stop_file = argc > 4 ? argv[4] : NULL;
    long good = 0, bad = 0;
    page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return 2;
    strcpy(page, "page of the parent");
    page_ready(); /* a place to start a trace that lists the page as readable */
    if (strcmp(mode, "unmap") == 0) {
        pid_t child = fork();
        if (child == 0) {
            long sum = serve(0, 0);
            munmap(page, 4096);
            sum += serve(0, 1);
            _exit(checksum(sum));
        }
        ended_well(child, 1) ? ++good : ++bad;
    } else if (strcmp(mode, "prefork") == 0) {
        pid_t children[64];
        const long n = workers < 64 ? workers : 64;
        for (long w = 0; w < n; ++w) {
            children[w] = fork();
            if (children[w] == 0) {
                struct batch b = {w, requests, 0};
                pthread_t thread;
                pthread_create(&thread, NULL, serve_batch, &b);
                long sum = 0;
                for (long r = 0; r < requests; ++r)
                    sum += serve(w, r);
                pthread_join(thread, NULL);
                _exit(checksum(sum + b.sum));
            }
        }
        for (long r = 0; r < requests; ++r)
            serve(-1, r);
        for (long w = 0; w < n; ++w)
            ended_well(children[w], expected_prefork(w, requests)) ? ++good : ++bad;
    } else {
        const int forever = strcmp(mode, "forever") == 0;
        for (long i = 0; forever || i < workers * requests; ++i) {
            if (forever && stop_file && access(stop_file, F_OK) == 0) break;
            pid_t child = fork();
            if (child == 0) {
                const long sum = serve(i, 0);
                if (!forever && i % 5 == 4) {
                    execl("/bin/true", "true", (char*)NULL);
                    _exit(126);
                }
                _exit(checksum(sum));
            }
            const long want = !forever && i % 5 == 4 ? 0 : (i * 7) & 0x7f;
            ended_well(child, want) ? ++good : ++bad;
            if (forever) {
                usleep(1000);
                if ((i + 1) % 100 == 0) printf("rounds %ld\n", i + 1), fflush(stdout);
            }
        }
    }
    all_served(); /* MARK: all_served */
    printf("served %ld bad %ld\n", good, bad);
    return bad != 0;
}
