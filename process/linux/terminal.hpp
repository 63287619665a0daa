#pragma once
// The terminal tpagent was started from, if any, handed to the programs it starts, as
// gdbserver does: their process group becomes the terminal's foreground one, so they read
// what is typed there and a ^C typed there reaches them (gdb then sees the SIGINT). tpagent
// takes the terminal back when it exits.
#include <sys/types.h>

namespace tpagent::process::terminal {

// Makes process group `pgid` the foreground one of tpagent's terminal, when tpagent has one
// and is in its foreground (not when started in the background, or with no terminal).
void give_to(pid_t pgid);
// tpagent's own group has it again (when the program it gave it to ends, and at exit).
void take_back();

} // namespace tpagent::process::terminal
