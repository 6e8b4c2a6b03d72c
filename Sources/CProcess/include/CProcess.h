// The C seam of BridgeProcess: a spawn that runs code between fork and exec (Foundation's Process and
// swift-subprocess 1.0 cannot): the child enters its directory by descriptor, empties its signal mask, resets every
// signal to its default, optionally sets PR_SET_NO_NEW_PRIVS and restricts itself to a Landlock ruleset, then execs.
// Supervised, it runs under a supervisor in a process group of its own that is killed when the bridge dies. Between
// fork and exec only async-signal-safe system calls: nothing here allocates.
#ifndef CPROCESS_H
#define CPROCESS_H

#include <errno.h>
#include <stdint.h>

#include <sys/types.h>

/// Where a spawn failed (``cpr_spawn``'s `stage`).
enum cpr_stage {
    CPR_STAGE_NONE = 0,
    CPR_STAGE_PIPE = 1,
    CPR_STAGE_FORK = 2,
    CPR_STAGE_PARENT_GONE = 3,
    CPR_STAGE_CHDIR = 4,
    CPR_STAGE_NO_NEW_PRIVS = 5,
    CPR_STAGE_LANDLOCK = 6,
    CPR_STAGE_EXEC = 7,
    CPR_STAGE_UNSUPPORTED = 8,
};

/// What ``cpr_spawn`` starts.
struct cpr_spawn_request {
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
    /// 1: under a supervisor in a process group of its own, killed with the bridge; 0: a direct child in the
    /// bridge's process group.
    int supervised;
};

/// Starts `request`. Supervised: under a supervisor in a new process group (whose id is the supervisor's pid,
/// returned in `pid`); the supervisor forks the command and ends as it ended (same exit code, or the same signal);
/// when the bridge's process is gone first, it kills its process group (itself, the command and the command's
/// children); the command dies with its supervisor (PR_SET_PDEATHSIG); SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and
/// SIGUSR2 sent to the supervisor are passed on to the command. Not supervised: the command is the child (`pid`).
/// Either way the command enters `directory` by descriptor, sets PR_SET_NO_NEW_PRIVS, restricts itself to `ruleset`,
/// and execs with an empty signal mask and every signal at its default. Returns 0 once the command has been
/// executed, or -1 with the failing stage and errno in `stage` and `code` (the child is then reaped). The caller
/// waits for `pid` with waitpid(2).
int cpr_spawn(const struct cpr_spawn_request *request, pid_t *pid, int *stage, int *code);

#endif
