// --follow DIR: the frames of a recording (tpagent --record DIR) printed as they reach its
// files, text or JSON lines, from the newest file on: each file read as it grows, a frame
// printed once whole, the next file taken up once one exists and nothing more came (the
// recorder ends a file before it begins the next; one cut short by a crash is left then too).
// Frames are numbered from the first printed. Runs until killed.
#pragma once
#include "tools/tpdump/options.hpp"
#include <cstdio>
#include <functional>

namespace tpagent::tpdump {

// An exit code: only an unusable folder or a file that is not a trace file end it, or
// `stop`, if given, saying so.
int follow_folder(const Options& options, std::FILE* out, const std::function<bool()>& stop = {});

// --follow BOARD ([HOST:]PORT of tpagent --record-host): the stream received into a folder of
// its own, removed at the end, and followed there, until SIGINT or SIGTERM.
int follow_board(const Options& options, std::FILE* out);

} // namespace tpagent::tpdump
