#pragma once
// Portable basics shared by g++, nvcc and NVRTC: fixed-width integers, the
// host/device qualifier and the few atomics the ECS needs. No host-only
// includes may appear here: NVRTC compiles this file at run time.

#if defined(__CUDACC_RTC__)
namespace orrery {
using int8_t = signed char;
using uint8_t = unsigned char;
using int16_t = short;
using uint16_t = unsigned short;
using int32_t = int;
using uint32_t = unsigned int;
using int64_t = long long;
using uint64_t = unsigned long long;
using size_t = unsigned long;
} // namespace orrery
#else
#include <cstddef>
#include <cstdint>
namespace orrery {
using std::int16_t;
using std::int32_t;
using std::int64_t;
using std::int8_t;
using std::size_t;
using std::uint16_t;
using std::uint32_t;
using std::uint64_t;
using std::uint8_t;
} // namespace orrery
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define ORRERY_HD __host__ __device__
#define ORRERY_DEVICE_CODE 1
#else
#define ORRERY_HD
#endif

#if defined(__CUDA_ARCH__)
#define ORRERY_ON_DEVICE 1
#endif

/// Marks a system (a free function the engine calls for each world or entity).
/// It expands to `inline` plus the host/device qualifiers so one definition
/// serves the CPU executor and the NVRTC megakernel.
#define ORRERY_SYSTEM inline ORRERY_HD

namespace orrery {

/// Atomically adds `v` to `*p` and returns the old value. Safe on both backends.
ORRERY_HD inline uint32_t atomic_add(uint32_t* p, uint32_t v) {
#if defined(ORRERY_ON_DEVICE)
    return atomicAdd(p, v);
#else
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

/// Atomically sets the bits `v` in `*p` (relaxed).
ORRERY_HD inline void atomic_or(uint32_t* p, uint32_t v) {
#if defined(ORRERY_ON_DEVICE)
    atomicOr(p, v);
#else
    __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
#endif
}

/// Atomically subtracts `v` from `*p`, returns the old value.
ORRERY_HD inline int32_t atomic_sub(int32_t* p, int32_t v) {
#if defined(ORRERY_ON_DEVICE)
    return atomicSub(p, v);
#else
    return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);
#endif
}

/// Stores `v` into `*p` only if `*p` is zero (first error wins). Returns the old value.
ORRERY_HD inline uint32_t atomic_set_if_zero(uint32_t* p, uint32_t v) {
#if defined(ORRERY_ON_DEVICE)
    return atomicCAS(p, 0u, v);
#else
    uint32_t expected = 0;
    __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return expected;
#endif
}

namespace detail {
struct alignas(16) Bytes16 {
    uint32_t w[4];
};
struct alignas(8) Bytes8 {
    uint32_t w[2];
};
} // namespace detail

/// Sets `n` bytes at `p` to `v`. Systems that clear an observation use it in
/// place of a byte loop: on the GPU it stores 16, 8 or 4 bytes per instruction
/// as the address allows (a byte loop is one store instruction per byte).
ORRERY_HD inline void fill_bytes(uint8_t* p, uint8_t v, size_t n) {
#if defined(ORRERY_ON_DEVICE)
    size_t i = 0;
    uint32_t word = 0x01010101u * v;
    size_t a = size_t(p);
    if (a % 16 == 0) {
        detail::Bytes16 b{{word, word, word, word}};
        for (; i + 16 <= n; i += 16) *reinterpret_cast<detail::Bytes16*>(p + i) = b;
    } else if (a % 8 == 0) {
        detail::Bytes8 b{{word, word}};
        for (; i + 8 <= n; i += 8) *reinterpret_cast<detail::Bytes8*>(p + i) = b;
    } else if (a % 4 == 0) {
        for (; i + 4 <= n; i += 4) *reinterpret_cast<uint32_t*>(p + i) = word;
    }
    for (; i < n; ++i) p[i] = v;
#else
    __builtin_memset(p, v, n);
#endif
}

/// Copies `n` bytes from `src` to `dst` (not overlapping), as wide as both addresses allow.
ORRERY_HD inline void copy_bytes(uint8_t* dst, const uint8_t* src, size_t n) {
#if defined(ORRERY_ON_DEVICE)
    size_t i = 0;
    size_t a = size_t(dst) | size_t(src);
    if (a % 16 == 0) {
        for (; i + 16 <= n; i += 16)
            *reinterpret_cast<detail::Bytes16*>(dst + i) = *reinterpret_cast<const detail::Bytes16*>(src + i);
    } else if (a % 8 == 0) {
        for (; i + 8 <= n; i += 8)
            *reinterpret_cast<detail::Bytes8*>(dst + i) = *reinterpret_cast<const detail::Bytes8*>(src + i);
    } else if (a % 4 == 0) {
        for (; i + 4 <= n; i += 4) *reinterpret_cast<uint32_t*>(dst + i) = *reinterpret_cast<const uint32_t*>(src + i);
    }
    for (; i < n; ++i) dst[i] = src[i];
#else
    __builtin_memcpy(dst, src, n);
#endif
}

namespace detail {
/// Lane `lane` of `lanes`: bytes before dst's first U boundary and after its
/// last, then the U-sized pieces between, each lane taking every lanes-th.
template <class U, class Fn> ORRERY_HD void lane_pieces(uint8_t* dst, size_t n, uint32_t lane, uint32_t lanes, Fn fn) {
    constexpr size_t k = sizeof(U);
    size_t head = (k - size_t(dst) % k) % k;
    if (head > n) head = n;
    size_t body = (n - head) / k;
    for (size_t i = lane; i < head; i += lanes) fn(i, 1);
    for (size_t i = lane; i < body; i += lanes) fn(head + i * k, k);
    for (size_t i = head + body * k + lane; i < n; i += lanes) fn(i, 1);
}
} // namespace detail

/// Lane `lane` of `lanes`'s share of fill_bytes(p, v, n): all lanes together
/// fill the n bytes, each piece as wide as the address allows (16 bytes on the
/// GPU between the first and last 16-byte boundary).
ORRERY_HD inline void fill_bytes_lanes(uint8_t* p, uint8_t v, size_t n, uint32_t lane, uint32_t lanes) {
    if (lanes == 1) return fill_bytes(p, v, n);
    const uint32_t word = 0x01010101u * v;
    detail::lane_pieces<detail::Bytes16>(p, n, lane, lanes, [&](size_t at, size_t k) {
        if (k == 16)
            *reinterpret_cast<detail::Bytes16*>(p + at) = detail::Bytes16{{word, word, word, word}};
        else
            p[at] = v;
    });
}

/// Lane `lane` of `lanes`'s share of copy_bytes(dst, src, n): pieces of 16, 8,
/// 4 or 1 bytes as the two addresses' alignment to each other allows.
ORRERY_HD inline void copy_bytes_lanes(uint8_t* dst, const uint8_t* src, size_t n, uint32_t lane, uint32_t lanes) {
    if (lanes == 1) return copy_bytes(dst, src, n);
    const size_t apart = size_t(dst) - size_t(src);
    auto copy = [&](auto unit) {
        using U = decltype(unit);
        detail::lane_pieces<U>(dst, n, lane, lanes, [&](size_t at, size_t k) {
            if (k == sizeof(U))
                *reinterpret_cast<U*>(dst + at) = *reinterpret_cast<const U*>(src + at);
            else
                dst[at] = src[at];
        });
    };
    if (apart % 16 == 0)
        copy(detail::Bytes16{});
    else if (apart % 8 == 0)
        copy(detail::Bytes8{});
    else if (apart % 4 == 0)
        copy(uint32_t{});
    else
        copy(uint8_t{});
}

template <class T> ORRERY_HD constexpr T min_of(T a, T b) { return a < b ? a : b; }
template <class T> ORRERY_HD constexpr T max_of(T a, T b) { return a < b ? b : a; }

} // namespace orrery
