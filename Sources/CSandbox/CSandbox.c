// The sandbox's system calls (see include/CSandbox.h).
#define _GNU_SOURCE 1
#include "CSandbox.h"

#if defined(__linux__)
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/// The highest Landlock ABI the kernel offers, or -1 (errno ENOSYS or EOPNOTSUPP when it has none or it is off).
int csb_landlock_abi(void) {
#if defined(__linux__) && defined(SYS_landlock_create_ruleset)
    return (int)syscall(SYS_landlock_create_ruleset, (void *)0, (size_t)0, (uint32_t)1);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/// A new ruleset (a close-on-exec descriptor) handling `fs` (and, from ABI 6, `scoped`), or -1 with errno.
int csb_landlock_create_ruleset(uint64_t fs, uint64_t scoped, int abi) {
#if defined(__linux__) && defined(SYS_landlock_create_ruleset)
    struct { uint64_t fs; uint64_t net; uint64_t scoped; } attr = { fs, 0, scoped };
    size_t size = abi >= 6 ? 24 : (abi >= 4 ? 16 : 8);
    return (int)syscall(SYS_landlock_create_ruleset, &attr, size, (uint32_t)0);
#else
    (void)fs; (void)scoped; (void)abi;
    errno = ENOSYS;
    return -1;
#endif
}

/// Allows `access` beneath the file or directory open at `fd` (O_PATH is enough); 0, or -1 with errno.
int csb_landlock_allow(int ruleset, int fd, uint64_t access) {
#if defined(__linux__) && defined(SYS_landlock_add_rule)
    struct __attribute__((packed)) { uint64_t access; int32_t fd; } rule = { access, fd };
    return (int)syscall(SYS_landlock_add_rule, ruleset, 1 /* LANDLOCK_RULE_PATH_BENEATH */, &rule, (uint32_t)0);
#else
    (void)ruleset; (void)fd; (void)access;
    errno = ENOSYS;
    return -1;
#endif
}

int csb_open_path(int dirfd, const char *name) {
#if defined(__linux__)
    return openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
#else
    (void)dirfd; (void)name;
    errno = ENOSYS;
    return -1;
#endif
}
