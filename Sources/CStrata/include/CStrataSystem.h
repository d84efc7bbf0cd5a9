#ifndef C_STRATA_SYSTEM_H
#define C_STRATA_SYSTEM_H

#include <stddef.h>
#include <sys/types.h>

/// Opens `path` (relative to `folder`, or absolute) read-only, non-blocking and close-on-exec, but
/// only if every component of the path is already in the kernel's lookup cache, so that the call
/// never waits for the disk (Linux 5.12's openat2 with RESOLVE_CACHED). Returns the descriptor,
/// or -1 with errno EAGAIN when the lookup would need the disk, ENOSYS or EINVAL where the kernel
/// or the platform cannot do it, or the error of the open.
int strata_open_cached(int folder, const char *path);

/// Reads up to `count` bytes at `offset` from `descriptor` into `buffer`, but only from the page
/// cache, so that the call never waits for the disk (Linux 4.14's preadv2 with RWF_NOWAIT).
/// Returns the bytes read, or -1 with errno EAGAIN when some of them would need the disk,
/// ENOSYS or EOPNOTSUPP where the kernel, the file system or the platform cannot do it.
ssize_t strata_pread_cached(int descriptor, void *buffer, size_t count, off_t offset);

#endif
