// `tpdump record BOARD:PORT DIR`: the host end of a record stream (tpagent --record-host,
// server/record_stream.hpp). It connects to the board, applies the recording's file operations
// to DIR (the same trace-NNNNNN.tf files the board would have made), and says after each batch
// which operation it has kept, so that the board forgets them. It keeps that in
// DIR/.tpdump-record (the stream, the last operation kept, the number its files go on after), so
// after a link cut, or after it was itself killed and started again, the stream goes on from
// the next operation: no gap. A new stream (tpagent started again) goes on after the files
// already in DIR, the newest of them sealed first if the board's end cut it short. Connects
// again every half second while the board is away; runs until SIGINT or SIGTERM.
#pragma once
#include <span>

namespace tpagent::tpdump {

// `args`: what follows "record". An exit code.
int record_main(std::span<char* const> args);

} // namespace tpagent::tpdump
