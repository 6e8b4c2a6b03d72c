// The C seam of the bridge's sandbox: the Landlock system calls (Swift cannot reach the variadic syscall(2)). The
// spawn that applies a ruleset between fork and exec is CProcess's (BridgeProcess).
#ifndef CSANDBOX_H
#define CSANDBOX_H

#include <errno.h>
#include <stdint.h>

#include <sys/types.h>

// Landlock's constants, spelled here so that an older <linux/landlock.h> does not limit what the kernel offers.
#define CSB_ACCESS_FS_EXECUTE (1ULL << 0)
#define CSB_ACCESS_FS_WRITE_FILE (1ULL << 1)
#define CSB_ACCESS_FS_READ_FILE (1ULL << 2)
#define CSB_ACCESS_FS_READ_DIR (1ULL << 3)
#define CSB_ACCESS_FS_REMOVE_DIR (1ULL << 4)
#define CSB_ACCESS_FS_REMOVE_FILE (1ULL << 5)
#define CSB_ACCESS_FS_MAKE_CHAR (1ULL << 6)
#define CSB_ACCESS_FS_MAKE_DIR (1ULL << 7)
#define CSB_ACCESS_FS_MAKE_REG (1ULL << 8)
#define CSB_ACCESS_FS_MAKE_SOCK (1ULL << 9)
#define CSB_ACCESS_FS_MAKE_FIFO (1ULL << 10)
#define CSB_ACCESS_FS_MAKE_BLOCK (1ULL << 11)
#define CSB_ACCESS_FS_MAKE_SYM (1ULL << 12)
#define CSB_ACCESS_FS_REFER (1ULL << 13)
#define CSB_ACCESS_FS_TRUNCATE (1ULL << 14)
#define CSB_ACCESS_FS_IOCTL_DEV (1ULL << 15)
/// O_PATH (Linux), which Swift's Glibc module leaves out (it needs _GNU_SOURCE).
#define CSB_O_PATH 010000000
#define CSB_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define CSB_SCOPE_SIGNAL (1ULL << 1)

/// The highest Landlock ABI the kernel offers, or -1 (errno ENOSYS or EOPNOTSUPP when it has none or it is off).
int csb_landlock_abi(void);

/// A new ruleset (a close-on-exec descriptor) handling `fs` (and, from ABI 6, `scoped`), or -1 with errno.
int csb_landlock_create_ruleset(uint64_t fs, uint64_t scoped, int abi);

/// Allows `access` beneath the file or directory open at `fd` (O_PATH is enough); 0, or -1 with errno.
int csb_landlock_allow(int ruleset, int fd, uint64_t access);

/// Opens `name` in the directory `dirfd` with O_PATH | O_NOFOLLOW | O_CLOEXEC (a handle for a rule: the file is
/// not opened for reading), or -1 with errno.
int csb_open_path(int dirfd, const char *name);

#endif
