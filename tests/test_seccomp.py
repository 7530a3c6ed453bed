"""The sandbox's seccomp filter, run by a small BPF interpreter for every machine it knows.

On this machine bwrap also loads it for real (tests/test_sandbox.py checks that
memfd_create, shmget, unshare and ptrace fail with EPERM); here each table is
checked instruction by instruction, aarch64's included, which never runs here.
"""

from __future__ import annotations

import errno
import struct

import pytest

from agon.verify import seccomp

ALLOW, EPERM = 0x7FFF0000, 0x00050000 | errno.EPERM
# Numbers of calls every program needs (read, write, openat, clone, exit_group, mmap) and the refused ones.
COMMON = {"x86_64": {"read": 0, "write": 1, "openat": 257, "clone": 56, "exit_group": 231, "mmap": 9},
          "aarch64": {"read": 63, "write": 64, "openat": 56, "clone": 220, "exit_group": 94, "mmap": 222}}


def run_filter(program: bytes, nr: int, arch: int, arg0: int = 0) -> int:
    """Evaluate the filter on seccomp_data {nr, arch, args[0]}: the subset of classic BPF it uses."""
    code = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    data = {0: nr & 0xFFFFFFFF, 4: arch, 16: arg0}
    acc, pc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x20:  # ld [k]
            acc = data[k]
        elif op == 0x15:  # jeq #k
            pc += jt if acc == k else jf
        elif op == 0x35:  # jge #k
            pc += jt if acc >= k else jf
        elif op == 0x06:  # ret #k
            return k
        else:
            raise AssertionError(f"unexpected opcode {op:#x}")
        pc += 1


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_refuses_the_listed_calls_and_allows_the_rest(machine):
    arch, _, numbers = seccomp._NUMBERS[machine]
    program = seccomp.program(machine)
    assert len(program) % 8 == 0 and len(program) // 8 < 4096  # BPF_MAXINSNS
    assert set(numbers) == {*seccomp.REFUSED, *seccomp.REFUSED_ARG0}
    for name in seccomp.REFUSED:
        assert run_filter(program, numbers[name], arch) == EPERM, name
    for name, nr in COMMON[machine].items():
        assert run_filter(program, nr, arch) == ALLOW, name
    assert run_filter(program, COMMON[machine]["read"], 0x40000003) == EPERM  # another ABI (i386)
    # signal handlers may be set, except on SIGCHLD (ignoring it would hide children's CPU time)
    for signum in (2, 10, 14, 15):
        assert run_filter(program, numbers["rt_sigaction"], arch, signum) == ALLOW, signum
    assert run_filter(program, numbers["rt_sigaction"], arch, 17) == EPERM  # SIGCHLD
    for domain, verdict in ((1, ALLOW), (16, ALLOW), (2, EPERM), (10, EPERM)):  # unix, netlink; inet, inet6
        assert run_filter(program, numbers["socket"], arch, domain) == verdict, domain
    assert run_filter(program, COMMON[machine]["write"], arch, 17) == ALLOW  # only rt_sigaction's SIGCHLD


def test_x32_calls_are_refused_on_x86_64():
    arch = seccomp._NUMBERS["x86_64"][0]
    assert run_filter(seccomp.program("x86_64"), 0x40000000 | 1, arch) == EPERM  # x32 write


def test_an_unknown_machine_is_refused_by_name():
    assert not seccomp.supported("riscv64")
    with pytest.raises(ValueError, match="riscv64"):
        seccomp.program("riscv64")
