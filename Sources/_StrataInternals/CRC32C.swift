internal import CStrata

/// CRC-32C, the checksum of disk payloads from format version 2: the processor's CRC32
/// instructions where it has them (SSE 4.2, ARMv8's CRC extension), run three streams at a time;
/// inputs of 1 KiB or more folded with carry-less multiplication where the processor has AVX-512
/// and VPCLMULQDQ (about twice as fast again).
package enum CRC32C {
    /// The checksum of the bytes in `buffer`, continuing from `crc` (0 to start).
    package static func checksum(_ buffer: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        strata_crc32c(crc, buffer.baseAddress, buffer.count)
    }

    /// The same checksum without folding: the processor's CRC32 instructions, three streams at a
    /// time, where it has them; otherwise the portable tables.
    package static func streamsChecksum(_ buffer: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        strata_crc32c_streams(crc, buffer.baseAddress, buffer.count)
    }

    /// The same checksum without the processor's instructions: slicing by eight tables.
    package static func portableChecksum(_ buffer: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        strata_crc32c_portable(crc, buffer.baseAddress, buffer.count)
    }

    /// Whether ``checksum(_:continuing:)`` uses the processor's instructions on this machine.
    package static var isHardwareAccelerated: Bool {
        strata_crc32c_is_hardware_accelerated() != 0
    }

    /// Whether ``checksum(_:continuing:)`` folds inputs of 1 KiB or more with AVX-512's carry-less
    /// multiplication on this machine.
    package static var folds: Bool {
        strata_crc32c_folds() != 0
    }
}
