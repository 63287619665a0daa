// The library's own memcpy/memset/memmove. The C library's versions use vector registers,
// which a jump pad does not save; with hidden visibility every call inside the library
// (including the ones the compiler emits) binds here.
#include <cstddef>
#include <cstdint>

extern "C" {

__attribute__((visibility("hidden"))) void* memcpy(void* dst, const void* src, std::size_t n) {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    for (; n >= 8; n -= 8, d += 8, s += 8) {
        std::uint64_t v;
        __builtin_memcpy(&v, s, 8); // constant size: a plain load, never a call
        __builtin_memcpy(d, &v, 8);
    }
    while (n--)
        *d++ = *s++;
    return dst;
}

__attribute__((visibility("hidden"))) void* memmove(void* dst, const void* src, std::size_t n) {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    if (d <= s || d >= s + n) return memcpy(dst, src, n);
    while (n--)
        d[n] = s[n];
    return dst;
}

__attribute__((visibility("hidden"))) void* memset(void* dst, int c, std::size_t n) {
    auto* d = static_cast<unsigned char*>(dst);
    while (n--)
        *d++ = static_cast<unsigned char>(c);
    return dst;
}

} // extern "C"

extern "C" __attribute__((visibility("hidden"))) void* memchr(const void* s, int c, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(s);
    for (; n--; ++p)
        if (*p == static_cast<unsigned char>(c)) return const_cast<unsigned char*>(p);
    return nullptr;
}
