"""Run a command as inside a container whose seccomp profile refuses namespaces (Docker's default profile for a
process without CAP_SYS_ADMIN): ``unshare`` and a ``clone`` that asks for a new namespace fail with EPERM, and
``clone3`` with ENOSYS (so the C library falls back to ``clone``). x86_64 only.

    python container_profile.py COMMAND [ARG...]
"""

import ctypes
import os
import struct
import sys

UNSHARE, CLONE, CLONE3 = 272, 56, 435
NEW_NAMESPACES = 0x7E020000  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
EPERM, ENOSYS = 1, 38
ALLOW, ERRNO = 0x7FFF0000, 0x00050000


def install() -> None:
    program = [
        (0x20, 0, 0, 0),  # the call's number
        (0x15, 0, 1, UNSHARE), (0x06, 0, 0, ERRNO | EPERM),
        (0x15, 0, 1, CLONE3), (0x06, 0, 0, ERRNO | ENOSYS),
        (0x15, 0, 3, CLONE),
        (0x20, 0, 0, 16),  # clone's flags (the low half of its first argument)
        (0x45, 0, 1, NEW_NAMESPACES), (0x06, 0, 0, ERRNO | EPERM),
        (0x06, 0, 0, ALLOW),
    ]
    code = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *line) for line in program))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(Program(len(program), ctypes.addressof(code))),
                                                 0, 0):
        sys.exit(f"seccomp: {os.strerror(ctypes.get_errno())}")


if __name__ == "__main__":
    install()
    os.execvp(sys.argv[1], sys.argv[1:])
