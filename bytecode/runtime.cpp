#include "bytecode/runtime.hpp"
#include "bytecode/semantics.hpp"
#include <algorithm>
#include <cstdio>

namespace tpagent::bytecode::rt {
namespace {

constexpr HelperResult ok(std::uint64_t v) {
    return {v, 0};
}
HelperResult fail(EvalOut* out, EvalStatus s, std::uint64_t where) {
    out->fault_address = where;
    return {0, static_cast<std::uint64_t>(s)};
}

// Reads len bytes wherever they are; the window first, then the callback.
bool read_bytes(const Context* c, std::uint64_t addr, void* dst, std::size_t len) {
    const std::uint64_t off = addr - c->window_start;
    if (c->window_loads != 0 && off < c->window_loads + 7 && len <= c->window_loads + 7 - off) {
        std::memcpy(dst, c->window_host + off, len);
        return true;
    }
    return c->read_memory && c->read_memory(c->user, addr, dst, len);
}

// Length of the string at addr including its NUL, at most max bytes. Reads in chunks that
// never cross a page boundary, falling back to single bytes when a chunk is unreadable.
bool string_length(const Context* c, std::uint64_t addr, std::uint64_t max, std::uint64_t& n,
                   std::uint64_t& fault) {
    constexpr std::uint64_t kPage = 4096, kChunk = 64;
    char buf[kChunk];
    n = 0;
    while (n < max) {
        const std::uint64_t at = addr + n;
        const std::uint64_t chunk = std::min({max - n, kChunk, kPage - at % kPage});
        if (!read_bytes(c, at, buf, chunk)) {
            // The readable part may end inside the chunk: go byte by byte up to the fault.
            for (std::uint64_t i = 0; i < chunk; ++i, ++n) {
                if (!read_bytes(c, at + i, buf, 1)) {
                    fault = at + i;
                    return false;
                }
                if (buf[0] == 0) {
                    ++n;
                    return true;
                }
            }
            continue;
        }
        if (const void* z = std::memchr(buf, 0, chunk)) {
            n += static_cast<const char*>(z) - buf + 1;
            return true;
        }
        n += chunk;
    }
    return true;
}

} // namespace

HelperResult read(const Context* c, EvalOut* out, std::uint64_t addr, std::uint64_t size) {
    std::uint64_t v = 0; // callers have tried the direct window already
    if (!c->read_memory || !c->read_memory(c->user, addr, &v, size))
        return fail(out, EvalStatus::MemoryError, addr);
    return ok(v);
}

HelperResult reg(const Context* c, EvalOut* out, std::uint64_t regnum, std::uint64_t) {
    std::uint64_t v = 0;
    if (!c->read_register || !c->read_register(c->user, static_cast<unsigned>(regnum), &v))
        return fail(out, EvalStatus::RegisterError, regnum);
    return ok(v);
}

HelperResult getv(const Context* c, EvalOut* out, std::uint64_t num, std::uint64_t) {
    std::int64_t v = 0;
    if (!c->get_tsv || !c->get_tsv(c->user, static_cast<unsigned>(num), &v))
        return fail(out, EvalStatus::TsvError, num);
    return ok(static_cast<std::uint64_t>(v));
}

HelperResult setv(const Context* c, EvalOut* out, std::uint64_t num, std::uint64_t value) {
    if (!c->set_tsv ||
        !c->set_tsv(c->user, static_cast<unsigned>(num), static_cast<std::int64_t>(value)))
        return fail(out, EvalStatus::TsvError, num);
    return ok(value);
}

HelperResult tracev(const Context* c, EvalOut* out, std::uint64_t num, std::uint64_t) {
    HelperResult r = getv(c, out, num, 0);
    if (r.status) return r;
    if (!c->collect_tsv ||
        !c->collect_tsv(c->user, static_cast<unsigned>(num), static_cast<std::int64_t>(r.value)))
        return fail(out, EvalStatus::CollectError, num);
    return r;
}

HelperResult trace(const Context* c, EvalOut* out, std::uint64_t addr, std::uint64_t len) {
    if (!c->collect_memory || !c->collect_memory(c->user, addr, len))
        return fail(out, EvalStatus::CollectError, addr);
    return ok(0);
}

HelperResult tracenz(const Context* c, EvalOut* out, std::uint64_t addr, std::uint64_t len) {
    std::uint64_t n = 0, fault = 0;
    if (!string_length(c, addr, len, n, fault)) return fail(out, EvalStatus::MemoryError, fault);
    if (n == 0) return ok(0);
    return trace(c, out, addr, n);
}

namespace {

// %s's argument: the string at `v` (NUL excluded, at most `precision` bytes when given) into
// str, which holds kMaxPrintfString + 1 bytes; a null pointer prints "(null)".
bool string_argument(const Context* c, EvalOut* out, std::uint64_t v, int precision, char* str,
                     std::size_t& len) {
    if (v == 0) {
        std::memcpy(str, "(null)", 7);
        len = 6;
        return true;
    }
    std::uint64_t max = kMaxPrintfString, fault = 0, n = 0;
    if (precision >= 0) max = std::min<std::uint64_t>(max, precision);
    if (!string_length(c, v, max, n, fault)) {
        out->fault_address = fault;
        return false;
    }
    if (n > 0 && !read_bytes(c, v, str, n)) {
        out->fault_address = v;
        return false;
    }
    len = n > 0 && str[n - 1] == '\0' ? n - 1 : n; // (no strlen in the agent)
    str[len] = '\0';
    return true;
}

} // namespace

HelperResult printf(const Context* c, EvalOut* out, const PrintfFormat* format,
                    const std::uint64_t* args) {
    char text[kMaxPrintfOutput];
    std::size_t used = 0;
    auto append = [&](const char* s, std::size_t n) {
        n = std::min(n, sizeof text - used);
        std::memcpy(text + used, s, n);
        used += n;
    };
    char field[kMaxPrintfField * 2 + 64];
    unsigned next = 0;
    for (const FormatPiece& piece : format->pieces) {
        append(piece.literal.data(), piece.literal.size());
        if (!piece.has_arg) continue;
        const std::uint64_t v = args[next++];
        int n = 0;
        switch (piece.kind) {
        case ArgKind::Signed:
            n = std::snprintf(field, sizeof field, piece.spec.c_str(),
                              static_cast<long long>(sem::sign_extend(v, piece.arg_bits)));
            break;
        case ArgKind::Unsigned:
            n = std::snprintf(field, sizeof field, piece.spec.c_str(),
                              static_cast<unsigned long long>(sem::zero_extend(v, piece.arg_bits)));
            break;
        case ArgKind::Char:
            n = std::snprintf(field, sizeof field, piece.spec.c_str(),
                              static_cast<int>(static_cast<unsigned char>(v)));
            break;
        case ArgKind::Pointer:
            n = std::snprintf(field, sizeof field, piece.spec.c_str(),
                              reinterpret_cast<void*>(static_cast<std::uintptr_t>(v)));
            break;
        case ArgKind::String: {
            char str[kMaxPrintfString + 1];
            std::size_t len = 0;
            if (!string_argument(c, out, v, piece.precision, str, len))
                return {0, static_cast<std::uint64_t>(EvalStatus::MemoryError)};
            n = std::snprintf(field, sizeof field, piece.spec.c_str(), str);
            break;
        }
        }
        if (n > 0) append(field, std::min<std::size_t>(n, sizeof field - 1));
    }
    if (!c->print || !c->print(c->user, text, used)) return fail(out, EvalStatus::PrintError, 0);
    return ok(0);
}

HelperResult printf_flat(const Context* c, EvalOut* out, const FlatFormat* format,
                         const std::uint64_t* args) {
    char text[kMaxPrintfOutput];
    FlatOutput o{text, sizeof text};
    unsigned next = 0;
    const FlatPiece* pieces = flat_pieces(format);
    for (std::uint32_t i = 0; i < format->piece_count; ++i) {
        const FlatPiece& piece = pieces[i];
        o.put(flat_literal(format, piece), piece.literal_size);
        if (!piece.has_arg) continue;
        const std::uint64_t v = args[next++];
        if (piece.kind != ArgKind::String) {
            render_number(piece, v, o);
            continue;
        }
        char str[kMaxPrintfString + 1];
        std::size_t len = 0;
        if (!string_argument(c, out, v, piece.precision, str, len))
            return {0, static_cast<std::uint64_t>(EvalStatus::MemoryError)};
        if (piece.precision >= 0) len = std::min<std::size_t>(len, piece.precision);
        render_text(piece, str, len, o);
    }
    if (!c->print || !c->print(c->user, text, o.used)) return fail(out, EvalStatus::PrintError, 0);
    return ok(0);
}

} // namespace tpagent::bytecode::rt
