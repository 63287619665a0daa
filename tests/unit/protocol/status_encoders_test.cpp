// Stop replies and qTStatus fields, byte for byte as gdbserver sends them.
#include "protocol/stop_reply.hpp"
#include "protocol/trace_status.hpp"
#include <catch2/catch.hpp>

using namespace tpagent::protocol;

TEST_CASE("stop replies: W, X and T with registers, thread and reason", "[protocol]") {
    StopReply exited{StopReply::Kind::Exited, 0x103, 0x4d2, {}, {}, false, false, {}, {}};
    CHECK(encode_stop_reply(exited) == "W03;process:4d2");
    StopReply killed{StopReply::Kind::Killed, 9, {}, {}, {}, false, false, {}, {}};
    CHECK(encode_stop_reply(killed) == "X09");
    StopReply trap;
    trap.code = 5;
    trap.registers = {{6, "00e0ffffff7f0000"}, {16, "3011400000000000"}};
    trap.thread = "p4d2.4d3";
    trap.swbreak = true;
    CHECK(encode_stop_reply(trap) ==
          "T0506:00e0ffffff7f0000;10:3011400000000000;thread:p4d2.4d3;swbreak:;");
    StopReply watch;
    watch.code = 5;
    watch.thread = "4d3";
    watch.watch = std::pair(3, std::uint64_t{0x404028});
    CHECK(encode_stop_reply(watch) == "T05thread:4d3;rwatch:404028;");
    StopReply call;
    call.code = 5;
    call.thread = "4d3";
    call.syscall = std::pair(true, std::uint64_t{0x3c});
    CHECK(encode_stop_reply(call) == "T05thread:4d3;syscall_entry:3c;");
    call.syscall = std::pair(false, std::uint64_t{1});
    CHECK(encode_stop_reply(call) == "T05thread:4d3;syscall_return:1;");
    StopReply exec{StopReply::Kind::Signal, 5, {}, {}, "p4d2.4d2"};
    exec.exec_path = "/bin/ls";
    CHECK(encode_stop_reply(exec) == "T05thread:p4d2.4d2;exec:2f62696e2f6c73;");
    StopReply fork{StopReply::Kind::Signal, 5, {}, {}, "p4d2.4d2"};
    fork.fork_child = "p4d9.4d9";
    CHECK(encode_stop_reply(fork) == "T05thread:p4d2.4d2;fork:p4d9.4d9;");
    fork.vfork = true;
    CHECK(encode_stop_reply(fork) == "T05thread:p4d2.4d2;vfork:p4d9.4d9;");
    StopReply done{StopReply::Kind::Signal, 5, {}, {}, "p4d2.4d2"};
    done.vfork_done = true;
    CHECK(encode_stop_reply(done) == "T05thread:p4d2.4d2;vforkdone:;");
    StopReply created{StopReply::Kind::Signal, 5, {}, {}, "p4d2.4e0"};
    created.thread_created = true;
    CHECK(encode_stop_reply(created) == "T05thread:p4d2.4e0;create:;");
    // A thread's exit: its status and the thread, never registers or the process field.
    StopReply gone{StopReply::Kind::ThreadExited, 0x100, 0x4d2, {}, "p4d2.4e0"};
    CHECK(encode_stop_reply(gone) == "w00;p4d2.4e0");
}

TEST_CASE("trace stop reasons", "[protocol]") {
    using Kind = TraceStopReason::Kind;
    CHECK(encode_stop_reason({}) == "tnotrun:0");
    CHECK(encode_stop_reason({Kind::Stop, "done", 0}) == "tstop:646f6e65:0");
    CHECK(encode_stop_reason({Kind::Full, {}, 0}) == "tfull:0");
    CHECK(encode_stop_reason({Kind::Disconnected, {}, 0}) == "tdisconnected:0");
    CHECK(encode_stop_reason({Kind::PassCount, {}, 0x1a}) == "tpasscount:1a");
    CHECK(encode_stop_reason({Kind::Error, "bad", 3}) == "terror:626164:3");
    CHECK(encode_stop_reason({Kind::Unknown, {}, 0}) == "tunknown:0");
}

TEST_CASE("qTStatus reply", "[protocol]") {
    TraceStatus s;
    s.running = true;
    s.frames = 2;
    s.created = 3;
    s.free = 0x100;
    s.size = 0x200;
    s.circular = true;
    s.start_time = 0x10;
    s.user = "me";
    CHECK(encode_trace_status(s) == "T1;tnotrun:0;tframes:2;tcreated:3;tfree:100;tsize:200;"
                                    "circular:1;disconn:0;starttime:10;stoptime:0;username:6d65;"
                                    "notes:");
}
