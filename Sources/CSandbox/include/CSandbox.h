// The C seam of the bridge's sandbox: the Landlock system calls (Swift cannot reach the variadic syscall(2)), and a
// spawn that runs code between fork and exec (Foundation's Process cannot): a supervisor that kills the command's
// process group when the bridge dies, and a child that enters the directory by descriptor, applies
// PR_SET_NO_NEW_PRIVS and a Landlock ruleset, then execs. Between fork and exec only async-signal-safe system calls.
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

/// Where a spawn failed (``csb_spawn``'s `stage`).
enum csb_stage {
    CSB_STAGE_NONE = 0,
    CSB_STAGE_PIPE = 1,
    CSB_STAGE_FORK = 2,
    CSB_STAGE_PARENT_GONE = 3,
    CSB_STAGE_CHDIR = 4,
    CSB_STAGE_NO_NEW_PRIVS = 5,
    CSB_STAGE_LANDLOCK = 6,
    CSB_STAGE_EXEC = 7,
    CSB_STAGE_UNSUPPORTED = 8,
};

/// The highest Landlock ABI the kernel offers, or -1 (errno ENOSYS or EOPNOTSUPP when it has none or it is off).
int csb_landlock_abi(void);

/// A new ruleset (a close-on-exec descriptor) handling `fs` (and, from ABI 6, `scoped`), or -1 with errno.
int csb_landlock_create_ruleset(uint64_t fs, uint64_t scoped, int abi);

/// Allows `access` beneath the file or directory open at `fd` (O_PATH is enough); 0, or -1 with errno.
int csb_landlock_allow(int ruleset, int fd, uint64_t access);

/// Opens `name` in the directory `dirfd` with O_PATH | O_NOFOLLOW | O_CLOEXEC (a handle for a rule: the file is
/// not opened for reading), or -1 with errno.
int csb_open_path(int dirfd, const char *name);

/// What ``csb_spawn`` starts.
struct csb_spawn_request {
    /// The program's path, its arguments and environment (NULL-terminated; prepared before the call: the child
    /// allocates nothing).
    const char *path;
    char *const *argv;
    char *const *envp;
    /// The directory the command starts in (fchdir), or -1 to stay where the bridge is.
    int directory;
    /// Standard input, output and error of the command.
    int input;
    int output;
    int error;
    /// A Landlock ruleset the command runs under, or -1 for none.
    int ruleset;
    /// Whether to set PR_SET_NO_NEW_PRIVS (always with a ruleset).
    int no_new_privs;
};

/// Starts `request` under a supervisor in a new process group (whose id is the supervisor's pid, returned in
/// `pid`). The supervisor forks the command and ends as it ended (same exit code, or the same signal); when the
/// bridge's process is gone first, it kills its process group (itself, the command and the command's children). The
/// command dies with its supervisor (PR_SET_PDEATHSIG), enters `directory` by descriptor, sets PR_SET_NO_NEW_PRIVS,
/// restricts itself to `ruleset`, and execs. SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to the
/// supervisor are passed on to the command (so a command may end gracefully; SIGKILL to the group ends them all). Returns 0 once the command has been executed, or -1 with the failing
/// stage and errno in `stage` and `code` (the supervisor is then reaped). The caller waits for `pid` with waitpid(2).
int csb_spawn(const struct csb_spawn_request *request, pid_t *pid, int *stage, int *code);

#endif
