"""Runs a command on a kernel that, for it and its children, has no Landlock: a seccomp filter answers the three
Landlock system calls with ENOSYS, as a kernel older than 5.13 (or one without `landlock` in `lsm=`) does.

    python3 no_landlock.py PROGRAM ARGS...

The filter is installed with PR_SET_NO_NEW_PRIVS (no privilege needed) and inherited across exec and fork; every
other system call is allowed. Linux only; x86-64 and aarch64 (the Landlock calls are 444-446 on both)."""

import ctypes
import os
import platform
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
ENOSYS = 38
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
LANDLOCK_CALLS = (444, 445, 446)  # landlock_create_ruleset, landlock_add_rule, landlock_restrict_self

BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_RET_K = 0x06


def instruction(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def install() -> None:
    arch = AUDIT_ARCH[platform.machine()]
    program = [
        instruction(BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        instruction(BPF_JEQ_K, 1, 0, arch),
        instruction(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        instruction(BPF_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    for n, call in enumerate(LANDLOCK_CALLS):
        left = len(LANDLOCK_CALLS) - n - 1
        program.append(instruction(BPF_JEQ_K, left + 1, 0, call))  # to the ERRNO return
    program.append(instruction(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    program.append(instruction(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS))
    code = b"".join(program)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = struct.pack("HxxxxxxQ", len(program), ctypes.addressof(buffer))
    fprog_buffer = ctypes.create_string_buffer(fprog, len(fprog))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog_buffer, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


if __name__ == "__main__":
    install()
    os.execvp(sys.argv[1], sys.argv[1:])
