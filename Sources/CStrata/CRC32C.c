// CRC-32C with the processor's instructions, three independent streams at a time so that the
// instruction's latency is hidden, and a portable slicing-by-eight fallback. The streams are
// joined by shifting a CRC over a block of zeros, a linear map computed once with GF(2)
// matrices (the method of zlib's crc32_combine).

#include "CStrataChecksum.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <cpuid.h>
#include <nmmintrin.h>
#define STRATA_CRC_HARDWARE __attribute__((target("sse4.2")))
#define STRATA_CRC64(crc, word) _mm_crc32_u64((crc), (word))
#define STRATA_CRC8(crc, byte) _mm_crc32_u8((uint32_t)(crc), (byte))
#define STRATA_HAS_HARDWARE_PATH 1
#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#define STRATA_CRC_HARDWARE
#define STRATA_CRC64(crc, word) __crc32cd((uint32_t)(crc), (word))
#define STRATA_CRC8(crc, byte) __crc32cb((uint32_t)(crc), (byte))
#define STRATA_HAS_HARDWARE_PATH 1
#else
#define STRATA_HAS_HARDWARE_PATH 0
#endif

/// The reflected Castagnoli polynomial.
#define STRATA_POLYNOMIAL 0x82F63B78u
/// The streams' block lengths: long blocks for long inputs, short ones for what is left.
#define STRATA_LONG_BLOCK 8192
#define STRATA_SHORT_BLOCK 256

static uint32_t portable_tables[8][256];
static uint32_t long_shifts[4][256];
static uint32_t short_shifts[4][256];
static int hardware_available;
static pthread_once_t prepared = PTHREAD_ONCE_INIT;

static inline uint64_t load_little_endian_64(const unsigned char *bytes) {
    uint64_t word;
    memcpy(&word, bytes, sizeof word);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    word = __builtin_bswap64(word);
#endif
    return word;
}

// MARK: Shifting a CRC over zeros

/// `matrix` (32 columns) times `vector` over GF(2).
static uint32_t matrix_times(const uint32_t *matrix, uint32_t vector) {
    uint32_t sum = 0;
    while (vector != 0) {
        if (vector & 1) sum ^= *matrix;
        vector >>= 1;
        matrix++;
    }
    return sum;
}

static void matrix_square(uint32_t *square, const uint32_t *matrix) {
    for (int column = 0; column < 32; column++) square[column] = matrix_times(matrix, matrix[column]);
}

/// The operator that feeds `length` zero bytes (a power of two) to a CRC's register.
static void zeros_operator(uint32_t *even, size_t length) {
    uint32_t odd[32];
    odd[0] = STRATA_POLYNOMIAL;  // one zero bit
    uint32_t row = 1;
    for (int column = 1; column < 32; column++) {
        odd[column] = row;
        row <<= 1;
    }
    matrix_square(even, odd);  // two zero bits
    matrix_square(odd, even);  // four zero bits
    // Each square doubles the count: the first gives one zero byte, in `even`.
    for (;;) {
        matrix_square(even, odd);
        length >>= 1;
        if (length == 0) return;
        matrix_square(odd, even);
        length >>= 1;
        if (length == 0) break;
    }
    memcpy(even, odd, sizeof odd);
}

/// Tables that apply the zeros operator for `length` bytes a byte of the register at a time.
static void make_shift_tables(uint32_t tables[4][256], size_t length) {
    uint32_t operator[32];
    zeros_operator(operator, length);
    for (uint32_t byte = 0; byte < 256; byte++) {
        tables[0][byte] = matrix_times(operator, byte);
        tables[1][byte] = matrix_times(operator, byte << 8);
        tables[2][byte] = matrix_times(operator, byte << 16);
        tables[3][byte] = matrix_times(operator, byte << 24);
    }
}

static inline uint32_t shift(const uint32_t tables[4][256], uint32_t crc) {
    return tables[0][crc & 0xFF] ^ tables[1][(crc >> 8) & 0xFF] ^ tables[2][(crc >> 16) & 0xFF]
        ^ tables[3][crc >> 24];
}

// MARK: Preparation

static void prepare(void) {
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; bit++) crc = (crc & 1) ? (crc >> 1) ^ STRATA_POLYNOMIAL : crc >> 1;
        portable_tables[0][byte] = crc;
    }
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = portable_tables[0][byte];
        for (int table = 1; table < 8; table++) {
            crc = portable_tables[0][crc & 0xFF] ^ (crc >> 8);
            portable_tables[table][byte] = crc;
        }
    }
    make_shift_tables(long_shifts, STRATA_LONG_BLOCK);
    make_shift_tables(short_shifts, STRATA_SHORT_BLOCK);
#if defined(__x86_64__) && STRATA_HAS_HARDWARE_PATH
    unsigned int eax, ebx, ecx, edx;
    hardware_available = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSE4_2) != 0;
#elif STRATA_HAS_HARDWARE_PATH
    hardware_available = 1;
#else
    hardware_available = 0;
#endif
}

// MARK: Portable

static uint32_t portable(uint32_t crc, const unsigned char *next, size_t length) {
    crc = ~crc;
    while (length > 0 && ((uintptr_t)next & 7) != 0) {
        crc = portable_tables[0][(crc ^ *next++) & 0xFF] ^ (crc >> 8);
        length--;
    }
    while (length >= 8) {
        uint64_t word = load_little_endian_64(next) ^ crc;
        crc = portable_tables[7][word & 0xFF] ^ portable_tables[6][(word >> 8) & 0xFF]
            ^ portable_tables[5][(word >> 16) & 0xFF] ^ portable_tables[4][(word >> 24) & 0xFF]
            ^ portable_tables[3][(word >> 32) & 0xFF] ^ portable_tables[2][(word >> 40) & 0xFF]
            ^ portable_tables[1][(word >> 48) & 0xFF] ^ portable_tables[0][word >> 56];
        next += 8;
        length -= 8;
    }
    while (length > 0) {
        crc = portable_tables[0][(crc ^ *next++) & 0xFF] ^ (crc >> 8);
        length--;
    }
    return ~crc;
}

// MARK: Hardware

#if STRATA_HAS_HARDWARE_PATH
/// Three streams over consecutive blocks of `block` bytes while at least three remain, joined by
/// shifting: CRC(a b c) = shift(shift(CRC(a)) ^ CRC(b)) ^ CRC(c) for the register without its
/// pre- and post-inversion, which is what the instructions compute.
#define STRATA_THREE_STREAMS(block, tables)                                      \
    while (length >= (size_t)(block) * 3) {                                      \
        uint64_t crc1 = 0, crc2 = 0;                                             \
        const unsigned char *end = next + (block);                               \
        do {                                                                     \
            crc0 = STRATA_CRC64(crc0, load_little_endian_64(next));              \
            crc1 = STRATA_CRC64(crc1, load_little_endian_64(next + (block)));    \
            crc2 = STRATA_CRC64(crc2, load_little_endian_64(next + 2 * (block))); \
            next += 8;                                                           \
        } while (next < end);                                                    \
        crc0 = shift(tables, (uint32_t)crc0) ^ (uint32_t)crc1;                   \
        crc0 = shift(tables, (uint32_t)crc0) ^ (uint32_t)crc2;                   \
        next += 2 * (block);                                                     \
        length -= 3 * (size_t)(block);                                           \
    }

STRATA_CRC_HARDWARE
static uint32_t hardware(uint32_t crc, const unsigned char *next, size_t length) {
    uint64_t crc0 = (uint32_t)~crc;
    while (length > 0 && ((uintptr_t)next & 7) != 0) {
        crc0 = STRATA_CRC8(crc0, *next++);
        length--;
    }
    STRATA_THREE_STREAMS(STRATA_LONG_BLOCK, long_shifts)
    STRATA_THREE_STREAMS(STRATA_SHORT_BLOCK, short_shifts)
    while (length >= 8) {
        crc0 = STRATA_CRC64(crc0, load_little_endian_64(next));
        next += 8;
        length -= 8;
    }
    while (length > 0) {
        crc0 = STRATA_CRC8(crc0, *next++);
        length--;
    }
    return ~(uint32_t)crc0;
}
#endif

// MARK: Entry points

uint32_t strata_crc32c(uint32_t crc, const void *data, size_t length) {
    pthread_once(&prepared, prepare);
#if STRATA_HAS_HARDWARE_PATH
    if (hardware_available) return hardware(crc, data, length);
#endif
    return portable(crc, data, length);
}

uint32_t strata_crc32c_portable(uint32_t crc, const void *data, size_t length) {
    pthread_once(&prepared, prepare);
    return portable(crc, data, length);
}

int strata_crc32c_is_hardware_accelerated(void) {
    pthread_once(&prepared, prepare);
    return hardware_available;
}
