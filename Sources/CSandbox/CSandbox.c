// The sandbox's system calls and its spawn (see include/CSandbox.h). Between fork and exec only async-signal-safe
// system calls: nothing here allocates.
#define _GNU_SOURCE 1
#include "CSandbox.h"

#if defined(__linux__)
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
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

#if defined(__linux__)
/// Reports `stage` and `code` on `fd` (the error pipe) and exits 127.
static void csb_fail(int fd, int stage, int code) {
    int report[2] = { stage, code };
    ssize_t written = write(fd, report, sizeof report);
    (void)written;
    _exit(127);
}

/// Moves the descriptors the child keeps to 0, 1, 2 (input, output, error), 3 (directory), 4 (ruleset) and 5 (the
/// error pipe, close-on-exec), and closes every other one: the supervisor must not hold the bridge's sockets open.
static void csb_arrange(const struct csb_spawn_request *request, int report) {
    int wanted[6] = { request->input, request->output, request->error, request->directory, request->ruleset, report };
    int floor = 6;
    for (int i = 0; i < 6; i++) if (wanted[i] >= floor) floor = wanted[i] + 1;
    int moved[6];
    for (int i = 0; i < 6; i++) {
        moved[i] = wanted[i] < 0 ? -1 : fcntl(wanted[i], F_DUPFD_CLOEXEC, floor);
        if (wanted[i] >= 0 && moved[i] < 0) csb_fail(report, CSB_STAGE_PIPE, errno);
    }
    for (int i = 0; i < 6; i++) {
        if (moved[i] < 0) continue;
        int flags = i == 5 ? O_CLOEXEC : 0;
        if (dup3(moved[i], i, flags) < 0) csb_fail(moved[5], CSB_STAGE_PIPE, errno);
    }
    long closed = -1;
#if defined(SYS_close_range)
    closed = syscall(SYS_close_range, 6U, ~0U, 0U);
#endif
    if (closed != 0) {
        struct rlimit limit;
        long top = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 65536 ? (long)limit.rlim_cur : 65536;
        for (long fd = 6; fd < top; fd++) close((int)fd);
    }
}

/// The command: dies with its supervisor, enters the directory, confines itself, execs.
static void csb_command(const struct csb_spawn_request *request, pid_t supervisor) {
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != supervisor) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, 0);
    if (request->directory >= 0 && fchdir(3) != 0) csb_fail(5, CSB_STAGE_CHDIR, errno);
    if ((request->no_new_privs || request->ruleset >= 0) && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        csb_fail(5, CSB_STAGE_NO_NEW_PRIVS, errno);
    }
#if defined(SYS_landlock_restrict_self)
    if (request->ruleset >= 0 && syscall(SYS_landlock_restrict_self, 4, (uint32_t)0) != 0) csb_fail(5, CSB_STAGE_LANDLOCK, errno);
#else
    if (request->ruleset >= 0) csb_fail(5, CSB_STAGE_LANDLOCK, ENOSYS);
#endif
    close(3);
    close(4);
    execve(request->path, request->argv, request->envp);
    csb_fail(5, CSB_STAGE_EXEC, errno);
}

/// The command the supervisor passes signals on to (set after the fork, in the supervisor only).
static volatile pid_t csb_forward_to = 0;

/// The supervisor's handler of the signals a caller sends to stop or poke the command (SIGTERM, SIGINT, SIGHUP,
/// SIGQUIT, SIGUSR1, SIGUSR2): passed on to the command, so that `kill -TERM <supervisor>` lets it end gracefully
/// instead of killing the supervisor (and with it, by PR_SET_PDEATHSIG, the command at once).
static void csb_forward(int signal) {
    int saved = errno;
    if (csb_forward_to > 0) kill(csb_forward_to, signal);
    errno = saved;
}

static const int csb_forwarded_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

/// The supervisor: forks the command, waits for it and ends as it ended (same exit code, or the same signal); when
/// the bridge's process is gone first it kills its process group (itself, the command and the command's children).
static void csb_supervise(const struct csb_spawn_request *request, int report, pid_t bridge) {
    setpgid(0, 0);
    struct sigaction standard = { 0 };
    standard.sa_handler = SIG_DFL;
    for (int signal = 1; signal < 65; signal++) {
        if (signal != SIGKILL && signal != SIGSTOP) sigaction(signal, &standard, 0);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, 0);
    csb_arrange(request, report);
    int watch = -1;
#if defined(SYS_pidfd_open)
    watch = (int)syscall(SYS_pidfd_open, bridge, 0U);
#endif
    if (getppid() != bridge) csb_fail(5, CSB_STAGE_PARENT_GONE, ESRCH);
    pid_t self = getpid();
    // The signals passed on stay blocked until the handler is in place (a signal sent meanwhile waits; the command
    // unblocks everything before exec), and are only taken while the supervisor polls (ppoll's mask): the handler
    // never runs once the command has been reaped, so it never signals a reused process id.
    sigset_t forwarded;
    sigemptyset(&forwarded);
    for (size_t i = 0; i < sizeof csb_forwarded_signals / sizeof csb_forwarded_signals[0]; i++) {
        sigaddset(&forwarded, csb_forwarded_signals[i]);
    }
    sigprocmask(SIG_BLOCK, &forwarded, 0);
    pid_t command = fork();
    if (command < 0) csb_fail(5, CSB_STAGE_FORK, errno);
    if (command == 0) csb_command(request, self);
    for (int fd = 0; fd < 6; fd++) close(fd);
    csb_forward_to = command;
    struct sigaction forward = { 0 };
    forward.sa_handler = csb_forward;
    sigfillset(&forward.sa_mask);
    for (size_t i = 0; i < sizeof csb_forwarded_signals / sizeof csb_forwarded_signals[0]; i++) {
        sigaction(csb_forwarded_signals[i], &forward, 0);
    }
    int ended_watch = -1;
#if defined(SYS_pidfd_open)
    ended_watch = (int)syscall(SYS_pidfd_open, command, 0U);
#endif
    int status = 0;
    for (;;) {
        pid_t ended = waitpid(command, &status, WNOHANG);
        if (ended == command) break;
        if (getppid() != bridge) {
            kill(-self, SIGKILL);
            _exit(137);
        }
        // With pidfds the end of either process wakes the poll; without, look again every quarter second. Signals
        // to pass on are taken here only.
        struct pollfd ends[2] = { { watch, POLLIN, 0 }, { ended_watch, POLLIN, 0 } };
        struct timespec quarter = { 0, 250000000 };
        ppoll(ends, 2, watch >= 0 && ended_watch >= 0 ? 0 : &quarter, &none);
    }
    if (WIFSIGNALED(status)) {
        int signal = WTERMSIG(status);
        struct rlimit nocore = { 0, 0 };
        setrlimit(RLIMIT_CORE, &nocore);
        sigaction(signal, &standard, 0);
        sigset_t only;
        sigemptyset(&only);
        sigaddset(&only, signal);
        sigprocmask(SIG_UNBLOCK, &only, 0);
        kill(self, signal);
        _exit(128 + signal);
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}
#endif

int csb_open_path(int dirfd, const char *name) {
#if defined(__linux__)
    return openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
#else
    (void)dirfd; (void)name;
    errno = ENOSYS;
    return -1;
#endif
}

/// Starts `request` under a supervisor in a new process group (whose id is the supervisor's pid, returned in
/// `pid`); 0 once the command has been executed, or -1 with the failing stage and errno in `stage` and `code` (the
/// supervisor is then reaped). The caller waits for `pid` with waitpid(2): it ends as the command ended.
int csb_spawn(const struct csb_spawn_request *request, pid_t *pid, int *stage, int *code) {
#if defined(__linux__)
    int pipe_ends[2];
    if (pipe2(pipe_ends, O_CLOEXEC) != 0) {
        *stage = CSB_STAGE_PIPE;
        *code = errno;
        return -1;
    }
    pid_t bridge = getpid();
    pid_t supervisor = fork();
    if (supervisor < 0) {
        *stage = CSB_STAGE_FORK;
        *code = errno;
        close(pipe_ends[0]);
        close(pipe_ends[1]);
        return -1;
    }
    if (supervisor == 0) {
        close(pipe_ends[0]);
        csb_supervise(request, pipe_ends[1], bridge);
    }
    close(pipe_ends[1]);
    setpgid(supervisor, supervisor);
    int report[2] = { 0, 0 };
    size_t got = 0;
    while (got < sizeof report) {
        ssize_t count = read(pipe_ends[0], (char *)report + got, sizeof report - got);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        got += (size_t)count;
    }
    close(pipe_ends[0]);
    *pid = supervisor;
    if (got == sizeof report) {
        int status;
        while (waitpid(supervisor, &status, 0) < 0 && errno == EINTR) {}
        *stage = report[0];
        *code = report[1];
        return -1;
    }
    *stage = CSB_STAGE_NONE;
    *code = 0;
    return 0;
#else
    (void)request; (void)pid;
    *stage = CSB_STAGE_UNSUPPORTED;
    *code = ENOSYS;
    return -1;
#endif
}

