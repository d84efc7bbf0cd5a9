// Checks Sources/CStrata/CRC32C.c on whatever processor runs it: known answers, then random
// buffers of many lengths and alignments against a bitwise reference, through every entry point
// (folding, three streams, portable) and when continued across calls. scripts/crc32c-cross.sh
// builds it natively and for aarch64 Linux (run under qemu).
//
//   crc32c-test [--expect=hardware|portable|any]
//
// Prints which path this processor takes; exits 1 on a wrong answer, or when the path is not the
// one expected (a processor with the CRC instructions that does not use them fails
// `--expect=hardware`).

#include "CStrataChecksum.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

/// A bit at a time, straight from the definition: the reflected Castagnoli polynomial,
/// pre- and post-inverted.
static uint32_t reference(uint32_t crc, const unsigned char *data, size_t length) {
    crc = ~crc;
    for (size_t index = 0; index < length; index++) {
        crc ^= data[index];
        for (int bit = 0; bit < 8; bit++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}

static void expect_equal(const char *what, size_t length, size_t offset, uint32_t got, uint32_t expected) {
    if (got == expected) return;
    if (failures < 20) {
        fprintf(stderr, "FAIL %s: length %zu, offset %zu: 0x%08X, expected 0x%08X\n", what, length, offset,
            got, expected);
    }
    failures++;
}

/// Every entry point, whole and split in two at `split`, against `expected`.
static void check(const unsigned char *data, size_t length, size_t offset, uint32_t start, size_t split,
    uint32_t expected) {
    expect_equal("strata_crc32c", length, offset, strata_crc32c(start, data, length), expected);
    expect_equal("strata_crc32c_streams", length, offset, strata_crc32c_streams(start, data, length), expected);
    expect_equal("strata_crc32c_portable", length, offset, strata_crc32c_portable(start, data, length), expected);
    uint32_t first = strata_crc32c(start, data, split);
    expect_equal("strata_crc32c continued", length, offset, strata_crc32c(first, data + split, length - split),
        expected);
}

static uint64_t state = 0x9E3779B97F4A7C15u;

static uint64_t next_random(void) {  // xorshift64*
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Du;
}

int main(int argc, char **argv) {
    const char *expect = "any";
    for (int index = 1; index < argc; index++) {
        if (strncmp(argv[index], "--expect=", 9) == 0) {
            expect = argv[index] + 9;
        } else {
            fprintf(stderr, "usage: %s [--expect=hardware|portable|any]\n", argv[0]);
            return 2;
        }
    }

    // Known answers: the check value of the CRC catalogue and RFC 3720's (iSCSI) B.4 vectors.
    unsigned char vector[32];
    check((const unsigned char *)"123456789", 9, 0, 0, 4, 0xE3069283u);
    memset(vector, 0, sizeof vector);
    check(vector, 32, 0, 0, 7, 0x8A9136AAu);
    memset(vector, 0xFF, sizeof vector);
    check(vector, 32, 0, 0, 7, 0x62A8AB43u);
    for (int index = 0; index < 32; index++) vector[index] = (unsigned char)index;
    check(vector, 32, 0, 0, 7, 0x46DD794Eu);
    for (int index = 0; index < 32; index++) vector[index] = (unsigned char)(31 - index);
    check(vector, 32, 0, 0, 7, 0x113FDB5Cu);
    expect_equal("reference", 9, 0, reference(0, (const unsigned char *)"123456789", 9), 0xE3069283u);

    // Random buffers: every length to 1100 (the folding threshold is 1024), then lengths around
    // the streams' blocks (3 x 256 and 3 x 8192 bytes), each at a different alignment.
    enum { capacity = 3 * 8192 * 2 + 4096 + 64 };
    unsigned char *buffer = malloc(capacity);
    if (buffer == NULL) return 2;
    for (size_t index = 0; index < capacity; index++) buffer[index] = (unsigned char)next_random();
    size_t checked = 0;
    for (size_t length = 0; length <= 1100; length++) {
        size_t offset = (size_t)(next_random() % 64);
        uint32_t start = (uint32_t)next_random();
        size_t split = length == 0 ? 0 : (size_t)(next_random() % (length + 1));
        check(buffer + offset, length, offset, start, split, reference(start, buffer + offset, length));
        checked++;
    }
    static const size_t long_lengths[] = {
        767, 768, 769, 1023, 1024, 1025, 1279, 1280, 2047, 2048, 4095, 4096, 8191, 8192, 8193, 24575, 24576, 24577,
        24576 + 768, 24576 + 1024 + 7, 2 * 24576, 2 * 24576 + 255, 2 * 24576 + 4095,
    };
    for (size_t item = 0; item < sizeof long_lengths / sizeof long_lengths[0]; item++) {
        for (size_t offset = 0; offset < 64; offset += 9) {
            size_t length = long_lengths[item];
            uint32_t start = (uint32_t)next_random();
            size_t split = (size_t)(next_random() % (length + 1));
            check(buffer + offset, length, offset, start, split, reference(start, buffer + offset, length));
            checked++;
        }
    }
    free(buffer);

    const char *path = strata_crc32c_is_hardware_accelerated() ? "hardware" : "portable";
    printf("path: %s, folds: %s, %zu random buffers, %d wrong answers\n", path, strata_crc32c_folds() ? "yes" : "no",
        checked, failures);
    if (strcmp(expect, "any") != 0 && strcmp(expect, path) != 0) {
        fprintf(stderr, "FAIL expected the %s path, took the %s path\n", expect, path);
        return 1;
    }
    return failures == 0 ? 0 : 1;
}
