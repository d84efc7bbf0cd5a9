// CRC-32C with the processor's instructions, three independent streams at a time so that the
// instruction's latency is hidden, and a portable slicing-by-eight fallback. The streams are
// joined by shifting a CRC over a block of zeros, a linear map computed once with GF(2)
// matrices (the method of zlib's crc32_combine).
//
// On x86-64 processors with AVX-512 and VPCLMULQDQ, long inputs are folded instead: four 512-bit
// accumulators multiply what they hold (carry-less) by x^n mod P for the distance n to the data
// they are folded into, 256 bytes a step, and the last 16 bytes go through the CRC32 instruction
// (the folding method of Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ").

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
#define STRATA_HAS_WIDE_PATH 1
#include <immintrin.h>
#define STRATA_CRC_WIDE __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))
#if defined(__APPLE__)
#include <sys/sysctl.h>  // for AVX-512, which macOS enables lazily (see `prepare`)
#define STRATA_ASKS_DARWIN 1
#endif
#elif defined(__aarch64__) && (defined(__clang__) || defined(__GNUC__)) \
    && (defined(__ARM_FEATURE_CRC32) || defined(__APPLE__) || defined(__linux__))
// ARMv8.0 makes the CRC instructions optional, so a target's baseline may leave them out: clang's
// does for tvOS 18 (whose oldest device, the Apple TV HD, has an A8, which lacks them) and for
// generic aarch64 Linux. The attribute asks for them in the one function that uses them, so the
// fast path is compiled whatever the baseline (`__ARM_FEATURE_CRC32` or not); `prepare` runs it
// only where the baseline promises the instructions or the system says this processor has them.
// This includes arm64_32 (watchOS), where clang defines `__aarch64__` too.
#include <arm_acle.h>
#if defined(__clang__)
#define STRATA_CRC_HARDWARE __attribute__((target("crc")))
#else
#define STRATA_CRC_HARDWARE __attribute__((target("+crc")))  // GCC spells extensions with a plus
#endif
#define STRATA_CRC64(crc, word) __crc32cd((uint32_t)(crc), (word))
#define STRATA_CRC8(crc, byte) __crc32cb((uint32_t)(crc), (byte))
#define STRATA_HAS_HARDWARE_PATH 1
#if !defined(__ARM_FEATURE_CRC32) && defined(__APPLE__)
#include <sys/sysctl.h>
#define STRATA_ASKS_DARWIN 1
#elif !defined(__ARM_FEATURE_CRC32)
#include <sys/auxv.h>
// The kernel's values (arch/arm64/include/uapi/asm/hwcap.h), for C libraries whose headers lack
// them.
#ifndef AT_HWCAP
#define AT_HWCAP 16
#endif
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1UL << 7)
#endif
#endif
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
static int wide_available;
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

#if defined(STRATA_ASKS_DARWIN)
/// Whether the `hw.optional` sysctl `name` (an `int`) is set; a name the system lacks reads as
/// unset.
static int darwin_has(const char *name) {
    int value = 0;
    size_t size = sizeof value;
    return sysctlbyname(name, &value, &size, NULL, 0) == 0 && value != 0;
}
#endif

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
    // Folding needs PCLMULQDQ, AVX-512F and VPCLMULQDQ, and an operating system that saves the
    // 512-bit registers (XCR0: SSE, AVX, opmask and both halves of the ZMM state).
    int pclmul = hardware_available && (ecx & bit_PCLMUL) != 0 && (ecx & bit_OSXSAVE) != 0;
    if (pclmul && __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ebx & bit_AVX512F) != 0
        && (ecx & bit_VPCLMULQDQ) != 0) {
#if defined(__APPLE__)
        // macOS leaves the AVX-512 state out of a thread's XCR0 until the thread's first AVX-512
        // instruction traps, so XCR0 reads without it here even where folding works; the kernel
        // says in `hw.optional.avx512f` whether it will save that state. There is no sysctl for
        // VPCLMULQDQ: CPUID's bit above says whether the processor has it (of the Intel Macs, only
        // the Ice Lake ones of 2020 do), and it uses no state beyond AVX-512F's.
        wide_available = darwin_has("hw.optional.avx512f");
#else
        unsigned int xcr0_low, xcr0_high;
        __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
        wide_available = (xcr0_low & 0xE6) == 0xE6;
#endif
    }
#elif STRATA_HAS_HARDWARE_PATH && defined(__ARM_FEATURE_CRC32)
    hardware_available = 1;  // every processor the target's baseline admits has the instructions
#elif STRATA_HAS_HARDWARE_PATH && defined(__APPLE__)
    hardware_available = darwin_has("hw.optional.armv8_crc32");
#elif STRATA_HAS_HARDWARE_PATH
    hardware_available = (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
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

// MARK: Folding, on x86-64 with AVX-512 and VPCLMULQDQ

#if STRATA_HAS_WIDE_PATH
/// Inputs at least this long are folded; shorter ones take the three streams.
#define STRATA_WIDE_MINIMUM 1024

/// Carry-less multiplies each 128-bit lane's halves by `constants` (x^(d+31) mod P for the low
/// half, x^(d-33) mod P for the high one, bit-reflected, for a fold over d bits) and adds `data`.
STRATA_CRC_WIDE
static inline __m512i fold_512(__m512i lanes, __m512i constants, __m512i data) {
    return _mm512_ternarylogic_epi64(
        _mm512_clmulepi64_epi128(lanes, constants, 0x00), _mm512_clmulepi64_epi128(lanes, constants, 0x11),
        data, 0x96);
}

STRATA_CRC_WIDE
static inline __m128i fold_128(__m128i lane, __m128i constants, __m128i data) {
    return _mm_xor_si128(
        _mm_xor_si128(_mm_clmulepi64_si128(lane, constants, 0x00), _mm_clmulepi64_si128(lane, constants, 0x11)),
        data);
}

STRATA_CRC_WIDE
static inline __m512i constants_512(uint64_t low, uint64_t high) {
    return _mm512_broadcast_i32x4(_mm_set_epi64x((long long)high, (long long)low));
}

/// `length` is at least 256.
STRATA_CRC_WIDE
static uint32_t wide(uint32_t crc, const unsigned char *next, size_t length) {
    __m512i x0 = _mm512_loadu_si512((const void *)next);
    __m512i x1 = _mm512_loadu_si512((const void *)(next + 64));
    __m512i x2 = _mm512_loadu_si512((const void *)(next + 128));
    __m512i x3 = _mm512_loadu_si512((const void *)(next + 192));
    x0 = _mm512_xor_si512(x0, _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, (long long)(uint32_t)~crc));
    next += 256;
    length -= 256;
    const __m512i over2048 = constants_512(0xDCB17AA4, 0xB9E02B86);
    while (length >= 256) {
        x0 = fold_512(x0, over2048, _mm512_loadu_si512((const void *)next));
        x1 = fold_512(x1, over2048, _mm512_loadu_si512((const void *)(next + 64)));
        x2 = fold_512(x2, over2048, _mm512_loadu_si512((const void *)(next + 128)));
        x3 = fold_512(x3, over2048, _mm512_loadu_si512((const void *)(next + 192)));
        next += 256;
        length -= 256;
    }
    const __m512i over512 = constants_512(0x740EEF02, 0x9E4ADDF8);
    x1 = fold_512(x0, over512, x1);
    x2 = fold_512(x1, over512, x2);
    __m512i x = fold_512(x2, over512, x3);
    while (length >= 64) {
        x = fold_512(x, over512, _mm512_loadu_si512((const void *)next));
        next += 64;
        length -= 64;
    }
    // The four 128-bit lanes into the last.
    const __m128i over128 = _mm_set_epi64x(0x493C7D27, 0xF20C0DFE);
    __m128i lane = _mm512_extracti32x4_epi32(x, 3);
    lane = fold_128(_mm512_extracti32x4_epi32(x, 0), _mm_set_epi64x(0xDDC0152B, 0x1C291D04), lane);
    lane = fold_128(_mm512_extracti32x4_epi32(x, 1), _mm_set_epi64x(0xBA4FC28E, 0x3DA6D0CB), lane);
    lane = fold_128(_mm512_extracti32x4_epi32(x, 2), over128, lane);
    while (length >= 16) {
        lane = fold_128(lane, over128, _mm_loadu_si128((const __m128i *)next));
        next += 16;
        length -= 16;
    }
    uint64_t register_ = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(lane));
    register_ = _mm_crc32_u64(register_, (uint64_t)_mm_extract_epi64(lane, 1));
    return hardware(~(uint32_t)register_, next, length);
}
#endif

// MARK: Entry points

/// The three streams where the processor has the instructions, else the tables; once prepared.
static uint32_t streams(uint32_t crc, const void *data, size_t length) {
#if STRATA_HAS_HARDWARE_PATH
    if (hardware_available) return hardware(crc, data, length);
#endif
    return portable(crc, data, length);
}

uint32_t strata_crc32c_streams(uint32_t crc, const void *data, size_t length) {
    pthread_once(&prepared, prepare);
    return streams(crc, data, length);
}

uint32_t strata_crc32c(uint32_t crc, const void *data, size_t length) {
    pthread_once(&prepared, prepare);
#if STRATA_HAS_WIDE_PATH
    if (wide_available && length >= STRATA_WIDE_MINIMUM) return wide(crc, data, length);
#endif
    return streams(crc, data, length);
}

uint32_t strata_crc32c_portable(uint32_t crc, const void *data, size_t length) {
    pthread_once(&prepared, prepare);
    return portable(crc, data, length);
}

int strata_crc32c_is_hardware_accelerated(void) {
    pthread_once(&prepared, prepare);
    return hardware_available;
}

int strata_crc32c_folds(void) {
    pthread_once(&prepared, prepare);
    return wide_available;
}
