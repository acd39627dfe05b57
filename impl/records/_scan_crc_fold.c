/* CRC-32C by carry-less multiply folding over 512-bit registers (AVX-512 + VPCLMULQDQ), the
 * technique of Gopal et al., "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"
 * (Intel, 2009), widened to four 128-bit lanes per register. Used by _scan_crc.c only when the
 * CPU and the OS support it; held to the byte table by tests/impl/test_crc_paths.py.
 *
 * The algebra (reflected CRC, data bit order LSB first). A 16-byte little-endian lane R stands
 * for r(x) = rev64(R_lo) x^64 + rev64(R_hi), placed x^e before the message end. Moving it D bits
 * later needs r(x) x^D mod P = rev64(R_lo) x^(D+64) + rev64(R_hi) x^D; since a carry-less
 * product of two reflected 64-bit values is the reflected product shifted by one, lane
 * constant K(n) = rev64(x^(n-1) mod P) gives fold(R) = clmul(R_lo, K(D+64)) ^ clmul(R_hi, K(D)),
 * congruent modulo P and at most 96 bits wide. The folded 16 bytes then go through the crc32
 * instruction from state 0, which yields r(x) x^32 mod P: the CRC of everything folded. */
#include "_scan.h"

#include <string.h>

#if defined(__x86_64__) && ((defined(__GNUC__) && __GNUC__ >= 8 && !defined(__clang__)) || \
                            (defined(__clang__) && __clang_major__ >= 7))
#include <immintrin.h>

#define POLY_NORMAL 0x11edc6f41ull /* x^32 + ...: CRC-32C, not reflected */
/* Prefetching 8 KiB ahead lifts a cold (not cached) MiB from ~90 to ~79 µs on the Intel VM:
 * the hardware prefetcher alone leaves the single stream short of the memory bandwidth. */
#define PREFETCH_AHEAD 8192
#define FOLD_TARGETS "avx512f,vpclmulqdq,pclmul,sse4.2"

/* Each pair: (K(D + 64), K(D)) for the lane distance D in bits. */
static uint64_t k_by4[2], k_by3[2], k_by2[2], k_by1[2], k_lane3[2], k_lane2[2], k_lane1[2];

static uint64_t xpow_mod(unsigned n) { /* x^n mod P, bit i = coefficient of x^i */
    uint64_t r = 1;
    while (n--) {
        r <<= 1;
        if (r & (1ull << 32)) r ^= POLY_NORMAL;
    }
    return r;
}

static uint64_t reflected_constant(unsigned n) { /* K(n): x^j of x^(n-1) mod P at bit 63 - j */
    uint64_t v = xpow_mod(n - 1), out = 0;
    for (int j = 0; j < 32; j++)
        if (v >> j & 1) out |= 1ull << (63 - j);
    return out;
}

static void pair(uint64_t *k, unsigned distance_bits) {
    k[0] = reflected_constant(distance_bits + 64);
    k[1] = reflected_constant(distance_bits);
}

void kl_crc_fold_init(void) {
    pair(k_by4, 4 * 512);
    pair(k_by3, 3 * 512);
    pair(k_by2, 2 * 512);
    pair(k_by1, 512);
    pair(k_lane3, 3 * 128);
    pair(k_lane2, 2 * 128);
    pair(k_lane1, 128);
}

__attribute__((target(FOLD_TARGETS))) static inline __m512i k512(const uint64_t *k) {
    return _mm512_broadcast_i32x4(_mm_set_epi64x((long long)k[1], (long long)k[0]));
}

/* Every lane of x moved forward by the distance of k, xor next (one three-way xor). */
__attribute__((target(FOLD_TARGETS))) static inline __m512i fold512(__m512i x, __m512i k,
                                                                   __m512i next) {
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), next, 0x96);
}

__attribute__((target(FOLD_TARGETS))) static inline __m128i fold128(__m128i x, const uint64_t *k,
                                                                   __m128i next) {
    __m128i kk = _mm_set_epi64x((long long)k[1], (long long)k[0]);
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, kk, 0x00),
                                       _mm_clmulepi64_si128(x, kk, 0x11)), next);
}

__attribute__((target(FOLD_TARGETS))) static inline __m512i load512(const unsigned char *p) {
    return _mm512_loadu_si512((const void *)p);
}

/* Folds the longest prefix of whole 64-byte blocks (len >= KL_FOLD_MIN, 256) and returns its length;
 * *crc becomes the CRC-32C of that prefix continuing *crc. */
__attribute__((target(FOLD_TARGETS))) size_t kl_crc_fold(uint32_t *crc, const unsigned char *p,
                                                         size_t len) {
    const unsigned char *start = p;
    /* The running CRC register enters as the message's first 32 bits (init folding). */
    __m512i x0 = _mm512_xor_si512(load512(p), _mm512_maskz_set1_epi32(1, (int)~*crc));
    __m512i x1 = load512(p + 64), x2 = load512(p + 128), x3 = load512(p + 192);
    p += 256;
    len -= 256;
    const __m512i by4 = k512(k_by4);
    while (len >= 256) {
        for (int line = 0; line < 256; line += 64)  /* a hint: never faults past the end */
            _mm_prefetch((const char *)p + PREFETCH_AHEAD + line, _MM_HINT_T0);
        x0 = fold512(x0, by4, load512(p));
        x1 = fold512(x1, by4, load512(p + 64));
        x2 = fold512(x2, by4, load512(p + 128));
        x3 = fold512(x3, by4, load512(p + 192));
        p += 256;
        len -= 256;
    }
    __m512i x = fold512(x0, k512(k_by3), x3);
    x = fold512(x1, k512(k_by2), x);
    x = fold512(x2, k512(k_by1), x);
    const __m512i by1 = k512(k_by1);
    while (len >= 64) {
        x = fold512(x, by1, load512(p));
        p += 64;
        len -= 64;
    }
    __m128i r = fold128(_mm512_extracti32x4_epi32(x, 0), k_lane3, _mm512_extracti32x4_epi32(x, 3));
    r = fold128(_mm512_extracti32x4_epi32(x, 1), k_lane2, r);
    r = fold128(_mm512_extracti32x4_epi32(x, 2), k_lane1, r);
    uint64_t state = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(r));
    state = _mm_crc32_u64(state, (uint64_t)_mm_extract_epi64(r, 1));
    *crc = ~(uint32_t)state;
    return (size_t)(p - start);
}

#else
void kl_crc_fold_init(void) {}
size_t kl_crc_fold(uint32_t *crc, const unsigned char *p, size_t len) {
    (void)crc, (void)p, (void)len;
    return 0;
}
#endif
