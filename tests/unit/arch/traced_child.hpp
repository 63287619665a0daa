// A forked child under ptrace for register and debug-register tests. The child body runs
// right after it stops itself with SIGSTOP, and must end with _exit.
#pragma once
#include <csignal>
#include <functional>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tpagent::test {

class TracedChild {
  public:
    // Forks; the parent returns once the child is stopped and traced.
    explicit TracedChild(void (*body)()) {
        pid_ = fork();
        if (pid_ == 0) {
            ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
            raise(SIGSTOP);
            body();
            _exit(100);
        }
        int status = 0;
        waitpid(pid_, &status, 0);
        stopped_ = WIFSTOPPED(status);
    }
    ~TracedChild() {
        if (pid_ > 0 && !exited_) {
            kill(pid_, SIGKILL);
            int status = 0;
            waitpid(pid_, &status, 0);
        }
    }
    TracedChild(const TracedChild&) = delete;
    TracedChild& operator=(const TracedChild&) = delete;

    pid_t pid() const { return pid_; }
    bool stopped() const { return stopped_; }

    // Continues and waits for the next stop: the stop signal, or -1 once the child exited.
    int resume() {
        ptrace(PTRACE_CONT, pid_, nullptr, nullptr);
        int status = 0;
        waitpid(pid_, &status, 0);
        if (WIFSTOPPED(status)) return WSTOPSIG(status);
        exited_ = true;
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return -1;
    }
    // Exit status (128 + signal when killed); valid after resume() returned -1.
    int exit_status() const { return exit_status_; }

  private:
    pid_t pid_ = -1;
    bool stopped_ = false;
    bool exited_ = false;
    int exit_status_ = -1;
};

} // namespace tpagent::test
