"""The sample's user: root (uid and gid 0) of a user namespace of its own, mapped to one unprivileged host user.

RepoExec's tests ran as root in a container, and some need it (flutils asserts ``os.getuid() == 0``, that root's
group is the user's, and changes the mode of ``~``); no sample may be the host's root. Where the engine is an
ordinary user, bubblewrap's user namespace gives this (``--uid 0``). Where the engine is root, bubblewrap makes
no user namespace (its root would be the host's), so the sample's first process, still the host's root, makes
one: it hands its home to the host user, leaves root's groups, unshares a user namespace whose only id, 0, is that
host user, becomes that 0, and drops every capability, in that namespace and for good, before anything of the
sample runs. A process still the host's root writes the maps: the warm executor's sample init, which is there
anyway, or a child forked before the unshare.

Runs as ``python -I -S -c SOURCE HOST_ID HOME ARGV...`` (then executes ARGV), or is imported by the warm
process's test process. Standard library only.
"""

import ctypes
import os
import struct
import sys

_LIBC = ctypes.CDLL(None, use_errno=True)
_NEWUSER = 0x10000000
_CAPBSET_DROP, _NO_NEW_PRIVS, _CAP_AMBIENT, _AMBIENT_CLEAR_ALL = 24, 38, 47, 4
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}.get(os.uname().machine, 126)


def check(result, what):
    """A C call's failure as an OSError naming the call (the warm process's calls use it too)."""
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def become_namespace_root(host_id, home, mapper=None):
    """Make this (host root, single-threaded) process root of a new user namespace whose 0 is ``host_id``. Its
    maps are written by a process that is still the host's root, asked through ``mapper`` (this process's ends of
    two pipes, whose other ends ``serve_maps`` holds): the warm executor's sample init; else a child forked here."""
    os.chmod(home, 0o700)
    os.chown(home, host_id, host_id)
    os.setgroups([])
    helper = None
    if mapper is None:
        asked, ask = os.pipe()
        answer, answered = os.pipe()
        helper = os.fork()
        if helper == 0:
            try:
                os.close(ask)
                os.close(answer)
                serve_maps(os.getppid(), host_id, asked, answered)
            finally:
                os._exit(0)
        os.close(asked)
        os.close(answered)
        mapper = (ask, answer)
    ask, answer = mapper
    try:
        check(_LIBC.unshare(_NEWUSER), "unshare a user namespace")
        os.write(ask, b"u")
        mapped = os.read(answer, 1) == b"m"
    finally:
        os.close(ask)
        os.close(answer)
        if helper is not None:
            os.waitpid(helper, 0)
    if not mapped:
        raise OSError(f"could not map the sample's user namespace to host user {host_id}")
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)


def serve_maps(pid, host_id, asked, answered):
    """In a process still the host's root (a namespace's own process may map no id but its own, and a
    privileged writer needs no unprivileged user namespaces from the host): once ``pid`` says it has unshared its
    user namespace, its only id, 0, mapped to ``host_id``, and that answered. Says nothing where it could not."""
    try:
        if os.read(asked, 1) == b"u":
            for name in ("uid_map", "gid_map"):
                with open(f"/proc/{pid}/{name}", "w") as handle:
                    handle.write(f"0 {host_id} 1\n")
            os.write(answered, b"m")
    except OSError:
        pass  # the sample's process says it could not be mapped
    finally:
        os.close(asked)
        os.close(answered)


def drop_capabilities():
    """No capability now or ever after: the bounding and ambient sets emptied, then the rest, and no_new_privs."""
    for capability in range(64):
        if _LIBC.prctl(_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            break  # past the last capability this kernel has
    _LIBC.prctl(_CAP_AMBIENT, _AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = ctypes.create_string_buffer(24)  # effective, permitted, inheritable: all empty, both words
    check(_LIBC.syscall(_SYS_CAPSET, ctypes.c_char_p(header), data), "capset")
    check(_LIBC.prctl(_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0), "prctl no_new_privs")


if __name__ == "__main__":
    host, home, *argv = sys.argv[1:]
    become_namespace_root(int(host), home)
    drop_capabilities()
    os.execv(argv[0], argv)
