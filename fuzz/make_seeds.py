#!/usr/bin/env python3
"""Writes the checked-in seed corpus, fuzz/corpus/<target>/, one input per file.

Seeds are valid inputs of every kind each target parses, so the fuzzers start from the
packets gdb really sends rather than from nothing: the agent expressions gdb compiled
(tests/vectors/ax/vectors.txt, captured from the real gdb), and the requests of a tracing
session as gdb 13 words them. The trace-file targets are seeded at configure time from
tests/data/tracefiles instead. Rerun after changing this file; the output is deterministic.

Usage: fuzz/make_seeds.py
"""
import hashlib
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
VECTORS = HERE.parent / "tests" / "vectors" / "ax" / "vectors.txt"
TRACEFILES = HERE.parent / "tests" / "data" / "tracefiles"
CORPUS = HERE / "corpus"


def bytecodes() -> list[bytes]:
    return [bytes.fromhex(line.split()[1]) for line in VECTORS.read_text().splitlines() if line.startswith("bytes ")]


def checksum(payload: bytes) -> bytes:
    return b"%02x" % (sum(payload) & 0xFF)


def frame(payload: bytes) -> bytes:
    escaped = bytearray()
    for b in payload:
        if b in b"$#}*":
            escaped += bytes([0x7D, b ^ 0x20])
        else:
            escaped.append(b)
    return b"$" + bytes(escaped) + b"#" + checksum(bytes(escaped))


# A tracing session's packets, as gdb 13 sends them to a stub (no process-starting or killing
# packets: fuzz_dispatch leaves those out, and they would not be seeds for it).
SESSION = [
    b"qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;fork-events+;vfork-events+;"
    b"exec-events+;vContSupported+;QThreadEvents+;no-resumed+;memory-tagging+",
    b"vMustReplyEmpty", b"QStartNoAckMode", b"Hgp0.0", b"qXfer:features:read:target.xml:0,1000",
    b"qTStatus", b"qTfV", b"qTsV", b"qTfP", b"qTsP", b"?", b"qXfer:threads:read::0,1000",
    b"qAttached", b"Hc-1", b"qC", b"qOffsets", b"g", b"m401000,40", b"p10", b"qSymbol::",
    b"qXfer:libraries-svr4:read::0,1000", b"qXfer:auxv:read::0,1000", b"QTinit",
    b"QTDP:1:401136:E:0:0-", b"QTDP:-1:401136:R03ff-", b"QTDP:-1:401136:M-1:404028:40-",
    b"QTDP:-1:401136:X0a,2600000000000000000127", b"QTDP:2:401150:E:0:5:F5:X03,220127-",
    b"QTDP:-2:401150:S:R01", b"QTDPsrc:1:401136:at:0:9:74726163656420313233",
    b"QTDPsrc:1:401136:cmd:0:c:636f6c6c6563742024726567", b"QTDV:1:0:1:7476",
    b"QTDisconnected:1", b"QTBuffer:circular:1", b"QTBuffer:size:100000", b"QTBuffer:size:-1",
    b"QTNotes:user:6a6f65;notes:6e6f746573", b"QTro:401000,402000", b"QTStart", b"qTP:1:401136",
    b"qTV:1", b"QTFrame:0", b"QTFrame:pc:401136", b"QTFrame:tdp:1", b"QTFrame:range:401000:402000",
    b"QTFrame:outside:401000:402000", b"QTFrame:-1", b"qTBuffer:0,1000", b"QTEnable:1:401136",
    b"QTDisable:1:401136", b"qTMinFTPILen", b"qXfer:traceframe-info:read::0,1000", b"QTStop",
    b"Z0,401136,1", b"z0,401136,1", b"Z2,404028,4", b"z2,404028,4", b"vCont?", b"vCont;c:p1.1;t",
    b"vCont;s:1", b"Tp1.1", b"qfThreadInfo", b"qsThreadInfo", b"M404028,4:01020304",
    b"X404028,4:\x01\x02\x03\x04", b"P10=0011223344556677", b"qTfSTM", b"qTsSTM",
    b"qTSTMat:401136", b"QPassSignals:e;10;14;17", b"QProgramSignals:0;1", b"qGetTLSAddr:1,0,0",
    b"qRelocInsn:4", b"E01",
    # Host I/O, confined by fuzz_dispatch to a directory of its own: create, write, read, stat,
    # close, readlink, unlink (file names in hex; flags O_CREAT|O_TRUNC|O_RDWR, mode 0644).
    b"vFile:setfs:0", b"vFile:open:6a6f6b65,602,1a4", b"vFile:pwrite:3,0,abc", b"vFile:pread:3,100,0",
    b"vFile:fstat:3", b"vFile:close:3", b"vFile:readlink:6a6f6b65", b"vFile:unlink:6a6f6b65",
    b"vFile:open:2e2e2f2e2e2f6574632f706173737764,0,0",
]

# fuzz_requests: the first byte picks the parser (see fuzz_requests.cpp's switch).
REQUESTS = {
    0: [b"401000,40", b"0,0", b"ffffffffffffffff,100000"],
    1: [b"404028,4:01020304", b"0,0:"],
    2: [b"404028,4:\x01\x02\x03\x04"],
    3: [b"0,401136,1", b"2,404028,4", b"1,401136,4;X3,220127"],
    4: [b"p1.2", b"p-1.-1", b"0", b"-1", b"1f"],
    5: [b"c:p1.2;s", b";c", b"s:1;c", b"r401000,401010:p1.1;c", b"C05:p1.1;t"],
    6: [b"", b"401000"],
    7: [b"05", b"0b;401000"],
    8: [b"target.xml:0,1000", b":10,ffb", b"annex:0,0"],
    9: [b"qRelocInsn:4", b"E01"],
    10: [b"1:401136:E:0:0-", b"2:401150:D:5:2:F5:S:X03,220127", b"3:401160:E:0:0:X02,2701"],
    11: [b"-1:401136:R03ff", b"-1:401136:M-1:404028:40-", b"-2:401150:SR01", b"-1:401136:L"],
    12: [b"1:401136:at:0:9:74726163656420313233", b"1:401136:cond:0:3:693e32"],
    13: [b"1:401136", b"ffffffff:ffffffffffffffff"],
    14: [b"0", b"-1", b"pc:401136", b"tdp:1", b"range:401000:402000", b"outside:1:2"],
    15: [b"size:100000", b"size:-1", b"circular:1"],
    16: [b"\"%d %s %c\\n\"", b"\"x=%lx y=%5.2f %%\""],
    17: [b"T1;tnotrun:0;tframes:5;tcreated:5;tfree:ff;tsize:1000;circular:1;disconn:1;"
         b"starttime:5f;stoptime:60;username:6a6f65;notes:6e;", b"T0;tstop:6869:1", b"T0;tfull:0"],
}


def short_tracefiles() -> list[bytes]:
    """Each trace file without its target description, and with only its first feature's
    registers (they then no longer cover the whole `R` block: the reader must cope)."""
    out = []
    for path in sorted(TRACEFILES.glob("*.tf")):
        data = path.read_bytes()
        end = data.index(b"\n\n") + 1  # the text section ends at an empty line
        lines, rest = data[:end].split(b"\n")[:-1], data[end:]
        tdesc = [i for i, line in enumerate(lines) if line.startswith(b"tdesc")]
        first, last = tdesc[0], tdesc[-1]
        core = []
        for line in lines[first : last + 1]:
            xml = line[len(b"tdesc") :].strip()
            if not xml.startswith((b"<flags", b"</flags", b"<field")):
                core.append(line)
            if xml.startswith(b"</feature"):
                break
        core.append(b"tdesc </target>")
        for kept in ([], core):
            out.append(b"\n".join(lines[:first] + kept + lines[last + 1 :]) + b"\n" + rest)
    return out


def write(target: str, inputs: list[bytes]) -> None:
    folder = CORPUS / target
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for data in inputs:
        (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def main() -> None:
    code = bytecodes()
    write("fuzz_ax_validate_interp", code)
    write("fuzz_ax_differential", [b"\x01" + c for c in code])  # odd first byte: raw bytecode
    actions = [b"QTDP:-1:401136:X%x,%s" % (len(c), c.hex().encode()) for c in code]
    session = SESSION + actions
    write("fuzz_dispatch", [frame(p) for p in session] + [b"".join(frame(p) for p in SESSION)])
    write("fuzz_packet_decoder", [frame(p) for p in SESSION] + [b"+$g#67-\x03$?#3f", b"$m0,4*!#00"])
    write("fuzz_requests", [bytes([k]) + v for k, values in REQUESTS.items() for v in values])
    short = short_tracefiles()
    write("fuzz_tracefile_reader", short)
    write("fuzz_tpdump", short)


if __name__ == "__main__":
    main()
