/* CRC-32C for the compiled scans (impl/records/_scan.h), the fastest path the CPU has, picked at run
 * time: carry-less multiply folding over 512-bit registers (AVX-512 VPCLMULQDQ: about four times
 * the crc32 instruction's 8 bytes a cycle, which bounds the append path's header pass, issue
 * #17), else the SSE4.2 crc32 instruction on three interleaved streams combined with zero
 * operators (Mark Adler's public-domain method), else a byte table. KAFKALOG_SCAN_NO_HW forces
 * the table, KAFKALOG_SCAN_NO_VPCLMUL the crc32 instruction (the tests compare all three). */
#include "_scan.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define KL_HAVE_SSE42_BUILD 1
#if (defined(__GNUC__) && __GNUC__ >= 8) || (defined(__clang__) && __clang_major__ >= 7)
#define KL_HAVE_VPCLMUL_BUILD 1
#endif
#endif

#define POLY 0x82f63b78u
/* Stream lengths of the three-way interleave, largest first: a 16 KiB batch takes one 3 x 4 KiB
 * round, one 3 x 1 KiB and one 3 x 256 B, so it pays three combines, not twenty-one. */
#define LEVELS 6
static const size_t block_sizes[LEVELS] = {8192, 4096, 2048, 1024, 512, 256};

static uint32_t crc_table[256];
static uint32_t crc_zeros[LEVELS][4][256];
static int use_hw = 0; /* 0 table, 1 crc32 instruction, 2 VPCLMULQDQ folding */

/* --- CRC-32C ---------------------------------------------------------------------------- */

static uint32_t crc32c_sw(uint32_t crc, const unsigned char *p, size_t len) {
    crc = ~crc;
    while (len--) crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    while (vec) {
        if (vec & 1) sum ^= *mat;
        vec >>= 1;
        mat++;
    }
    return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) square[n] = gf2_times(mat, mat[n]);
}

/* The operator that appends `len` zero bytes (a power of two) to a raw CRC register. */
static void zeros_op(uint32_t *even, size_t len) {
    uint32_t odd[32];
    uint32_t row = 1;
    odd[0] = POLY;
    for (int n = 1; n < 32; n++) {
        odd[n] = row;
        row <<= 1;
    }
    gf2_square(even, odd); /* 2 zero bits */
    gf2_square(odd, even); /* 4 zero bits */
    do {
        gf2_square(even, odd);
        len >>= 1;
        if (len == 0) return;
        gf2_square(odd, even);
        len >>= 1;
    } while (len);
    memcpy(even, odd, sizeof(odd));
}

static void zeros_tables(uint32_t zeros[][256], size_t len) {
    uint32_t op[32];
    zeros_op(op, len);
    for (uint32_t n = 0; n < 256; n++) {
        zeros[0][n] = gf2_times(op, n);
        zeros[1][n] = gf2_times(op, n << 8);
        zeros[2][n] = gf2_times(op, n << 16);
        zeros[3][n] = gf2_times(op, n << 24);
    }
}

static inline uint32_t shift_crc(uint32_t zeros[][256], uint32_t crc) {
    return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^ zeros[2][(crc >> 16) & 0xff] ^
           zeros[3][crc >> 24];
}

#ifdef KL_HAVE_SSE42_BUILD
static inline uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc,
                                                             const unsigned char *next,
                                                             size_t len) {
    uint64_t crc0 = crc ^ 0xffffffffu, crc1, crc2;
    const unsigned char *end;
    while (len && ((uintptr_t)next & 7) != 0) {
        crc0 = _mm_crc32_u8((uint32_t)crc0, *next++);
        len--;
    }
    for (int level = 0; level < LEVELS; level++) {
        const size_t block = block_sizes[level];
        while (len >= block * 3) {
            crc1 = crc2 = 0;
            end = next + block;
            do {
                crc0 = _mm_crc32_u64(crc0, load64(next));
                crc1 = _mm_crc32_u64(crc1, load64(next + block));
                crc2 = _mm_crc32_u64(crc2, load64(next + 2 * block));
                next += 8;
            } while (next < end);
            crc0 = shift_crc(crc_zeros[level], (uint32_t)crc0) ^ crc1;
            crc0 = shift_crc(crc_zeros[level], (uint32_t)crc0) ^ crc2;
            next += 2 * block;
            len -= 3 * block;
        }
    }
    while (len >= 8) {
        crc0 = _mm_crc32_u64(crc0, load64(next));
        next += 8;
        len -= 8;
    }
    while (len) {
        crc0 = _mm_crc32_u8((uint32_t)crc0, *next++);
        len--;
    }
    return (uint32_t)crc0 ^ 0xffffffffu;
}
#endif

uint32_t kl_crc32c(uint32_t crc, const unsigned char *p, size_t len) {
#ifdef KL_HAVE_VPCLMUL_BUILD
    if (use_hw == 2 && len >= KL_FOLD_MIN) {
        size_t folded = kl_crc_fold(&crc, p, len);
        return crc32c_hw(crc, p + folded, len - folded);
    }
#endif
#ifdef KL_HAVE_SSE42_BUILD
    if (use_hw) return crc32c_hw(crc, p, len);
#endif
    return crc32c_sw(crc, p, len);
}

void kl_crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        crc_table[n] = c;
    }
    for (int level = 0; level < LEVELS; level++) zeros_tables(crc_zeros[level], block_sizes[level]);
#ifdef KL_HAVE_SSE42_BUILD
    __builtin_cpu_init();
    use_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#ifdef KL_HAVE_VPCLMUL_BUILD
    /* libgcc reports avx512f only when the OS saves the 512-bit state (XCR0). */
    if (use_hw && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") &&
        __builtin_cpu_supports("pclmul") && getenv("KAFKALOG_SCAN_NO_VPCLMUL") == NULL) {
        kl_crc_fold_init();
        use_hw = 2;
    }
#endif
    if (getenv("KAFKALOG_SCAN_NO_HW") != NULL) use_hw = 0;
#endif
}

int kl_crc_hw(void) { return use_hw; }

const char *kl_crc_name(void) {
    static const char *names[] = {"table", "sse4.2", "avx512-vpclmulqdq"};
    return names[use_hw];
}
