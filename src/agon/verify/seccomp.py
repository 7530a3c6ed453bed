"""A seccomp-bpf filter for the code sandbox, compiled here (no libseccomp needed).

bwrap loads it with `--seccomp FD` (it reads `struct sock_filter` records from
the descriptor) just before it runs the program. The filter refuses, with EPERM:
  * memory the sandbox could not count: memfd_create and memfd_secret (pages
    that belong to no file system and, unmapped, to no process), SysV shmget
    (segments outlive every process that touched them) and msgget (queued
    messages are kernel memory). POSIX shared memory still works: /dev/shm is
    the sandbox's own size-limited tmpfs;
  * CPU time the sandbox could not count: rt_sigaction on SIGCHLD. A parent
    that ignores SIGCHLD (or sets SA_NOCLDWAIT) has its children reaped
    automatically, and their CPU time leaves /proc with them;
  * IPv4 and IPv6 sockets: the run's network namespace has only a loopback,
    and TCP buffers over it are kernel memory counted against the whole
    host's tcp_mem (unix sockets, for multiprocessing, still work);
  * kernel attack surface that no contest program needs (the list Docker's
    default profile also refuses): keyrings, bpf, perf events, userfaultfd,
    io_uring, ptrace and process_vm_*, module and kexec loading, mounting,
    namespaces (unshare, setns), swap, reboot, acct, file handles;
  * every system call of another ABI (32-bit x86 through int 0x80, x32): a
    filter keyed on numbers only holds for the ABI whose numbers it lists.

Numbers: x86_64 from arch/x86/entry/syscalls/syscall_64.tbl, aarch64 from
include/uapi/asm-generic/unistd.h (Linux 6.x). Only x86_64 has run here.
"""

from __future__ import annotations

import errno
import functools
import platform
import struct

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
# (args[0]'s low 32 bits at 16: both machines are little-endian)
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16
# BPF opcodes (linux/bpf_common.h)
_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06 | 0x00  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | errno.EPERM  # SECCOMP_RET_ERRNO

_X32_BIT = 0x40000000
# Calls refused for some values of their first argument.
REFUSED_ARG0 = {
    "rt_sigaction": (17,),  # SIGCHLD (17 on x86_64 and aarch64): ignoring it auto-reaps children
    "socket": (2, 10),  # AF_INET, AF_INET6: loopback TCP buffers are host-wide kernel memory (tcp_mem)
}
REFUSED = (
    "memfd_create", "memfd_secret", "shmget", "msgget",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "ptrace", "process_vm_readv", "process_vm_writev",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "mount", "umount2", "pivot_root", "fsopen", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "unshare", "setns", "swapon", "swapoff", "reboot", "acct", "name_to_handle_at", "open_by_handle_at",
)  # fmt: skip
_NUMBERS = {
    # machine: (AUDIT_ARCH_*, refuses numbers >= this (x32) or None, {name: nr})
    "x86_64": (0xC000003E, _X32_BIT, {
        "memfd_create": 319, "memfd_secret": 447, "shmget": 29, "msgget": 68, "rt_sigaction": 13, "socket": 41,
        "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
        "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
        "mount": 165, "umount2": 166, "pivot_root": 155, "fsopen": 430, "fsmount": 432, "fspick": 433,
        "move_mount": 429, "open_tree": 428, "mount_setattr": 442,
        "unshare": 272, "setns": 308, "swapon": 167, "swapoff": 168, "reboot": 169, "acct": 163,
        "name_to_handle_at": 303, "open_by_handle_at": 304,
    }),
    "aarch64": (0xC00000B7, None, {
        "memfd_create": 279, "memfd_secret": 447, "shmget": 194, "msgget": 186, "rt_sigaction": 134, "socket": 198,
        "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
        "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
        "mount": 40, "umount2": 39, "pivot_root": 41, "fsopen": 430, "fsmount": 432, "fspick": 433,
        "move_mount": 429, "open_tree": 428, "mount_setattr": 442,
        "unshare": 97, "setns": 268, "swapon": 224, "swapoff": 225, "reboot": 142, "acct": 89,
        "name_to_handle_at": 264, "open_by_handle_at": 265,
    }),
}  # fmt: skip


def supported(machine: str | None = None) -> bool:
    return (machine or platform.machine()) in _NUMBERS


@functools.cache
def program(machine: str | None = None) -> bytes:
    """The filter for `machine` (default: this one) as bytes for bwrap's --seccomp."""
    machine = machine or platform.machine()
    if machine not in _NUMBERS:
        raise ValueError(f"no seccomp syscall table for machine {machine!r} (known: {', '.join(_NUMBERS)})")
    arch, foreign_from, numbers = _NUMBERS[machine]
    # Instructions with symbolic jump targets ("eperm", "allow", "next": the next
    # argument rule), resolved below into offsets: instructions skipped after this one.
    code: list[tuple] = [
        (_LD_W_ABS, None, None, _OFFSET_ARCH),
        (_JEQ_K, None, "eperm", arch),  # another ABI: refused
        (_LD_W_ABS, None, None, _OFFSET_NR),
    ]
    if foreign_from is not None:
        code.append((_JGE_K, "eperm", None, foreign_from))
    code += [(_JEQ_K, "eperm", None, numbers[name]) for name in REFUSED]
    for name, values in REFUSED_ARG0.items():
        code.append((_JEQ_K, None, "next", numbers[name]))
        code.append((_LD_W_ABS, None, None, _OFFSET_ARG0))
        code += [(_JEQ_K, "eperm", None, v) for v in values]
        code.append((_RET_K, None, None, _RET_ALLOW))  # this call, another argument
        code.append("next")
    code += [(_RET_K, None, None, _RET_ALLOW), "eperm", (_RET_K, None, None, _RET_EPERM)]
    labels, instructions = {}, []
    for item in code:
        if isinstance(item, str):
            labels.setdefault(item, []).append(len(instructions))
        else:
            instructions.append(item)

    def offset(at: int, target) -> int:
        if target is None:
            return 0
        skip = min(pos for pos in labels[target] if pos > at) - at - 1  # to the next such label
        assert skip <= 255, "a BPF jump offset is one byte"
        return skip

    packed = []
    for at, (op, jt, jf, k) in enumerate(instructions):
        packed.append(struct.pack("=HBBI", op, offset(at, jt), offset(at, jf), k))
    return b"".join(packed)
