// The one C seam of the workspace file code: openat2(2), which Swift cannot reach through the variadic syscall(2),
// and the flag values Swift's Glibc module does not import.
#ifndef CWORKSPACEFS_H
#define CWORKSPACEFS_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>

#if defined(__linux__)
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/// RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS: no component may leave the directory (no "..", no absolute path, no
/// symbolic link leading out) and no /proc magic link is followed.
#if defined(__linux__)
static const uint64_t cwfs_resolve_beneath = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
#else
static const uint64_t cwfs_resolve_beneath = 0;
#endif

/// openat2(2) with `flags`, `mode` and `resolve`; -1 with errno ENOSYS where the kernel or platform lacks it.
static inline int cwfs_openat2(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve) {
#if defined(__linux__) && defined(SYS_openat2)
    struct open_how how = {0};
    how.flags = flags;
    how.mode = mode;
    how.resolve = resolve;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
#else
    (void)dirfd; (void)path; (void)flags; (void)mode; (void)resolve;
    errno = ENOSYS;
    return -1;
#endif
}

#endif
