#define _GNU_SOURCE
#include "CStrataSystem.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#if defined(__linux__)
#include <sys/syscall.h>
#include <sys/uio.h>
#include <stdint.h>

// Spelled out rather than taken from <linux/openat2.h>, which older kernel headers lack.
struct strata_open_how {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};

#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#define STRATA_RESOLVE_CACHED 0x20
#ifndef RWF_NOWAIT
#define RWF_NOWAIT 0x00000008
#endif

int strata_open_cached(int folder, const char *path) {
    struct strata_open_how how = {
        .flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
        .mode = 0,
        .resolve = STRATA_RESOLVE_CACHED,
    };
    return (int)syscall(SYS_openat2, folder, path, &how, sizeof how);
}

ssize_t strata_pread_cached(int descriptor, void *buffer, size_t count, off_t offset) {
    struct iovec vector = {.iov_base = buffer, .iov_len = count};
    return preadv2(descriptor, &vector, 1, offset, RWF_NOWAIT);
}

#else

int strata_open_cached(int folder, const char *path) {
    (void)folder;
    (void)path;
    errno = ENOSYS;
    return -1;
}

ssize_t strata_pread_cached(int descriptor, void *buffer, size_t count, off_t offset) {
    (void)descriptor;
    (void)buffer;
    (void)count;
    (void)offset;
    errno = ENOSYS;
    return -1;
}

#endif
