// vCont: resuming and stopping threads of every process gdb knows (GDB manual, Packets: vCont;
// Remote Non-Stop). All-stop with several processes (schedule-multiple on): one event goes to
// gdb, the other processes stop, and an event one of them had meanwhile waits for the next
// resume that includes it.
#include "process/target.hpp"
#include "server/packet_handlers.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "protocol/replies.hpp"
#include "protocol/requests.hpp"
#include "protocol/signals.hpp"
#include <algorithm>
#include <set>

namespace tpagent::server {

using namespace protocol;

namespace {

bool reaches_process(const ThreadId& id, pid_t pid) {
    return id.pid == ThreadId::kAny || id.pid == ThreadId::kAll || id.pid == pid;
}

bool matches(const ThreadId& id, pid_t pid, pid_t tid) {
    bool tid_ok = id.tid == ThreadId::kAny || id.tid == ThreadId::kAll || id.tid == tid;
    return reaches_process(id, pid) && tid_ok;
}

// Whether an action of a kind that stops (`t`), or of one that runs (c/s/r), reaches process
// `pid`.
bool reaches(const std::vector<ResumeAction>& actions, pid_t pid, bool stop) {
    return std::any_of(actions.begin(), actions.end(), [pid, stop](const ResumeAction& a) {
        return (a.kind == ResumeAction::Kind::Stop) == stop &&
               (!a.thread || reaches_process(*a.thread, pid));
    });
}

// All-stop: a resume that names only a process gdb holds (a vfork parent's followed child, a
// forked child kept by detach-on-fork off) and none of the served program's threads: that
// process is served from now on (gdb resumes one process at a time, schedule-multiple off),
// unless a trace runs (Server::serve). In non-stop mode nothing changes places.
Status serve_named_process(Session& s, const std::vector<ResumeAction>& actions) {
    auto* inf = s.live_inferior();
    std::optional<pid_t> named;
    for (const auto& a : actions) {
        if (a.kind == ResumeAction::Kind::Stop) continue;
        if (!a.thread || a.thread->pid <= 0 || (inf && a.thread->pid == inf->pid()))
            return ok_status(); // the served program resumes
        named = static_cast<pid_t>(a.thread->pid);
    }
    if (!named || s.non_stop()) return ok_status();
    if (!s.server().held_process(*named) && !s.server().hold_fork_child(*named))
        return ok_status(); // no such process: nothing resumes
    return s.server().serve(*named);
}

// Children held at their fork, which gdb was told of and kept (detach-on-fork off), that the
// actions run: each becomes a process of its own, held, and runs.
void hold_reached_fork_children(Session& s, const std::vector<ResumeAction>& actions) {
    std::set<pid_t> held;
    for (process::Target* p : s.server().processes())
        for (pid_t child : p->fork_children().list())
            held.insert(child);
    s.keep_announced_children(held);
    for (pid_t child : held)
        if (s.fork_child_announced(child) && reaches(actions, child, false))
            s.server().hold_fork_child(child);
}

// All-stop: an event of a process the actions run, which gdb has not heard of (it came while
// another process's event was reported), or the end of one gone meanwhile.
std::optional<process::StopEvent> waiting_event(Session& s,
                                                const std::vector<ResumeAction>& actions) {
    std::vector<pid_t> live;
    for (process::Target* p : s.server().processes())
        live.push_back(p->pid());
    for (pid_t pid : s.server().stashed_processes()) {
        const bool gone = std::find(live.begin(), live.end(), pid) == live.end();
        if (gone || reaches(actions, pid, false)) return s.server().take_stashed_event(pid);
    }
    return std::nullopt;
}

struct ProcessPlan {
    process::Target* process = nullptr;
    std::vector<process::ThreadResume> resume;
    std::vector<pid_t> stop;
};

// Each thread takes the leftmost action whose thread-id matches it. Non-stop: a thread gdb
// sees running (its stop not acknowledged yet, too) ignores c/s/r; one it sees stopped
// ignores t.
ProcessPlan plan_for(Session& s, process::Target& p, const std::vector<ResumeAction>& actions) {
    ProcessPlan plan{&p, {}, {}};
    for (pid_t tid : p.thread_ids()) {
        const bool stopped = p.thread_stopped(tid);
        for (const auto& a : actions) {
            if (a.thread && !matches(*a.thread, p.pid(), tid)) continue;
            if (a.kind == ResumeAction::Kind::Stop) {
                if (s.non_stop() && !stopped) plan.stop.push_back(tid);
            } else if (!s.non_stop() || (stopped && !s.stop_unacknowledged(tid))) {
                plan.resume.push_back({tid, a.kind == ResumeAction::Kind::Step,
                                       protocol::gdb_to_host_signal(a.signal), a.range_start,
                                       a.range_end});
            }
            break;
        }
    }
    return plan;
}

} // namespace

std::string handle_vcont(Session& s, std::string_view args) {
    auto actions = parse_vcont(args);
    if (!actions) return reply_error(actions.error());
    if (auto served = serve_named_process(s, *actions); !served)
        return reply_error_text(served.error());
    hold_reached_fork_children(s, *actions);
    if (!s.non_stop())
        if (auto ev = waiting_event(s, *actions)) {
            s.set_last_stop(*ev);
            return s.stop_reply(*ev);
        }
    std::vector<ProcessPlan> plans;
    for (process::Target* p : s.server().processes()) {
        plans.push_back(plan_for(s, *p, *actions));
        if (s.non_stop() && reaches(*actions, p->pid(), true)) s.notify_attach_stop(p->pid());
    }
    // A thread gdb stops that has gone with its process (its end not taken by gdb yet) is
    // stopped already.
    const bool only_stops = std::all_of(actions->begin(), actions->end(), [](const auto& a) {
        return a.kind == ResumeAction::Kind::Stop;
    });
    if (plans.empty()) return only_stops ? reply_ok() : reply_error(ErrorCode::NoProcess);
    bool any = false;
    for (auto& plan : plans) {
        if (!plan.stop.empty()) plan.process->stop_threads(plan.stop);
        any = any || !plan.resume.empty();
    }
    if (!any) return reply_ok(); // only `t` actions (all-stop: nothing runs anyway)
    for (std::size_t i = 0; i < plans.size(); ++i) {
        if (plans[i].resume.empty()) continue;
        auto r = plans[i].process->resume(plans[i].resume);
        if (!r) {
            if (i > 0 && !s.non_stop()) s.server().stop_others(nullptr);
            return reply_error(r.error());
        }
        if (!*r || s.non_stop()) continue;
        // An event held back in that process: reported at once, and what runs stops again.
        s.server().stop_others(plans[i].process);
        s.set_last_stop(**r);
        return s.stop_reply(**r);
    }
    if (s.non_stop()) return reply_ok();
    s.defer_reply();
    return {};
}

} // namespace tpagent::server
