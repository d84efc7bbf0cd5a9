#ifndef C_STRATA_CHECKSUM_H
#define C_STRATA_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/// CRC-32C (Castagnoli, the checksum of iSCSI, ext4 and SCTP) of `length` bytes at `data`,
/// continuing from `crc` (0 to start). Uses the processor's CRC32 instructions when it has them
/// (SSE 4.2 on x86-64, the CRC extension on 64-bit ARM), three streams at a time, and folds long
/// inputs with carry-less multiplication where the processor has AVX-512 and VPCLMULQDQ.
uint32_t strata_crc32c(uint32_t crc, const void *data, size_t length);

/// The same checksum without folding: the processor's CRC32 instructions, three streams at a
/// time, where it has them, else the portable tables; for tests that check every path on a
/// machine that folds.
uint32_t strata_crc32c_streams(uint32_t crc, const void *data, size_t length);

/// The same checksum computed without the processor's CRC32 instructions (eight tables, a byte
/// at a time for each); for tests that check both paths give one answer, and for processors
/// without the instructions.
uint32_t strata_crc32c_portable(uint32_t crc, const void *data, size_t length);

/// Whether `strata_crc32c` uses the processor's CRC32 instructions on this machine.
int strata_crc32c_is_hardware_accelerated(void);

/// Whether `strata_crc32c` folds inputs of 1 KiB or more with carry-less multiplication on this
/// machine (x86-64 with AVX-512 and VPCLMULQDQ).
int strata_crc32c_folds(void);

#endif
