// The one spawn of the package (see include/CProcess.h). Between fork and exec only async-signal-safe system calls:
// nothing here allocates.
#define _GNU_SOURCE 1
#include "CProcess.h"

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

/// Reports `stage` and `code` on `fd` (the error pipe) and exits 127.
static void cpr_fail(int fd, int stage, int code) {
    int report[2] = { stage, code };
    ssize_t written = write(fd, report, sizeof report);
    (void)written;
    _exit(127);
}

/// Every signal back to its default disposition (an ignored SIGPIPE or SIGTERM would survive exec) and none blocked
/// (a thread of Swift's concurrency pool blocks nearly all: a child of one would not stop on SIGTERM).
static void cpr_reset_signals(void) {
    struct sigaction standard = { 0 };
    standard.sa_handler = SIG_DFL;
    for (int signal = 1; signal < 65; signal++) {
        if (signal != SIGKILL && signal != SIGSTOP) sigaction(signal, &standard, 0);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, 0);
}

/// Moves the descriptors the child keeps to 0, 1, 2 (input, output, error), 3 (directory), 4 (ruleset) and 5 (the
/// error pipe, close-on-exec), and closes every other one: a child must not hold the bridge's sockets open.
static void cpr_arrange(const struct cpr_spawn_request *request, int report) {
    int wanted[6] = { request->input, request->output, request->error, request->directory, request->ruleset, report };
    int floor = 6;
    for (int i = 0; i < 6; i++) if (wanted[i] >= floor) floor = wanted[i] + 1;
    int moved[6];
    for (int i = 0; i < 6; i++) {
        moved[i] = wanted[i] < 0 ? -1 : fcntl(wanted[i], F_DUPFD_CLOEXEC, floor);
        if (wanted[i] >= 0 && moved[i] < 0) cpr_fail(report, CPR_STAGE_PIPE, errno);
    }
    for (int i = 0; i < 6; i++) {
        if (moved[i] < 0) continue;
        int flags = i == 5 ? O_CLOEXEC : 0;
        if (dup3(moved[i], i, flags) < 0) cpr_fail(moved[5], CPR_STAGE_PIPE, errno);
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

/// The command, its descriptors arranged: enters the directory, confines itself, execs.
static void cpr_exec(const struct cpr_spawn_request *request) {
    if (request->directory >= 0 && fchdir(3) != 0) cpr_fail(5, CPR_STAGE_CHDIR, errno);
    if ((request->no_new_privs || request->ruleset >= 0) && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        cpr_fail(5, CPR_STAGE_NO_NEW_PRIVS, errno);
    }
#if defined(SYS_landlock_restrict_self)
    if (request->ruleset >= 0 && syscall(SYS_landlock_restrict_self, 4, (uint32_t)0) != 0) cpr_fail(5, CPR_STAGE_LANDLOCK, errno);
#else
    if (request->ruleset >= 0) cpr_fail(5, CPR_STAGE_LANDLOCK, ENOSYS);
#endif
    close(3);
    close(4);
    execve(request->path, request->argv, request->envp);
    cpr_fail(5, CPR_STAGE_EXEC, errno);
}

/// A supervised command: dies with its supervisor, then as ``cpr_exec``.
static void cpr_command(const struct cpr_spawn_request *request, pid_t supervisor) {
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != supervisor) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, 0);
    cpr_exec(request);
}

/// A direct child: signals reset, descriptors arranged, then as ``cpr_exec``.
static void cpr_direct(const struct cpr_spawn_request *request, int report) {
    cpr_reset_signals();
    cpr_arrange(request, report);
    cpr_exec(request);
}

/// The command the supervisor passes signals on to (set after the fork, in the supervisor only).
static volatile pid_t cpr_forward_to = 0;

/// The supervisor's handler of the signals a caller sends to stop or poke the command (SIGTERM, SIGINT, SIGHUP,
/// SIGQUIT, SIGUSR1, SIGUSR2): passed on to the command, so that `kill -TERM <supervisor>` lets it end gracefully
/// instead of killing the supervisor (and with it, by PR_SET_PDEATHSIG, the command at once).
static void cpr_forward(int signal) {
    int saved = errno;
    if (cpr_forward_to > 0) kill(cpr_forward_to, signal);
    errno = saved;
}

static const int cpr_forwarded_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

/// The supervisor: forks the command, waits for it and ends as it ended (same exit code, or the same signal); when
/// the bridge's process is gone first it kills its process group (itself, the command and the command's children).
static void cpr_supervise(const struct cpr_spawn_request *request, int report, pid_t bridge) {
    setpgid(0, 0);
    cpr_reset_signals();
    struct sigaction standard = { 0 };
    standard.sa_handler = SIG_DFL;
    sigset_t none;
    sigemptyset(&none);
    cpr_arrange(request, report);
    int watch = -1;
#if defined(SYS_pidfd_open)
    watch = (int)syscall(SYS_pidfd_open, bridge, 0U);
#endif
    if (getppid() != bridge) cpr_fail(5, CPR_STAGE_PARENT_GONE, ESRCH);
    pid_t self = getpid();
    // The signals passed on stay blocked until the handler is in place (a signal sent meanwhile waits; the command
    // unblocks everything before exec), and are only taken while the supervisor polls (ppoll's mask): the handler
    // never runs once the command has been reaped, so it never signals a reused process id.
    sigset_t forwarded;
    sigemptyset(&forwarded);
    for (size_t i = 0; i < sizeof cpr_forwarded_signals / sizeof cpr_forwarded_signals[0]; i++) {
        sigaddset(&forwarded, cpr_forwarded_signals[i]);
    }
    sigprocmask(SIG_BLOCK, &forwarded, 0);
    pid_t command = fork();
    if (command < 0) cpr_fail(5, CPR_STAGE_FORK, errno);
    if (command == 0) cpr_command(request, self);
    for (int fd = 0; fd < 6; fd++) close(fd);
    cpr_forward_to = command;
    struct sigaction forward = { 0 };
    forward.sa_handler = cpr_forward;
    sigfillset(&forward.sa_mask);
    for (size_t i = 0; i < sizeof cpr_forwarded_signals / sizeof cpr_forwarded_signals[0]; i++) {
        sigaction(cpr_forwarded_signals[i], &forward, 0);
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

int cpr_spawn(const struct cpr_spawn_request *request, pid_t *pid, int *stage, int *code) {
#if defined(__linux__)
    int pipe_ends[2];
    if (pipe2(pipe_ends, O_CLOEXEC) != 0) {
        *stage = CPR_STAGE_PIPE;
        *code = errno;
        return -1;
    }
    pid_t bridge = getpid();
    pid_t child = fork();
    if (child < 0) {
        *stage = CPR_STAGE_FORK;
        *code = errno;
        close(pipe_ends[0]);
        close(pipe_ends[1]);
        return -1;
    }
    if (child == 0) {
        close(pipe_ends[0]);
        if (request->supervised) cpr_supervise(request, pipe_ends[1], bridge);
        cpr_direct(request, pipe_ends[1]);
    }
    close(pipe_ends[1]);
    if (request->supervised) setpgid(child, child);
    int report[2] = { 0, 0 };
    size_t got = 0;
    while (got < sizeof report) {
        ssize_t count = read(pipe_ends[0], (char *)report + got, sizeof report - got);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        got += (size_t)count;
    }
    close(pipe_ends[0]);
    *pid = child;
    if (got == sizeof report) {
        int status;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
        *stage = report[0];
        *code = report[1];
        return -1;
    }
    *stage = CPR_STAGE_NONE;
    *code = 0;
    return 0;
#else
    (void)request; (void)pid;
    *stage = CPR_STAGE_UNSUPPORTED;
    *code = ENOSYS;
    return -1;
#endif
}
