"""Boot a sandboxed program (run as `python -I -S _sandbox_boot.py CONFIG_JSON` by sandbox.py).

Sets up isolation in the order that works: namespaces and mounts need root, so they come
before dropping to the unprivileged uid; rlimits come last, then a fresh interpreter runs
the runner in the working directory. Any failure here exits 125 with a message starting
"sandbox boot failed", which the harness turns into an error (never into a test failure).
"""
import ctypes
import json
import os
import resource
import sys
import traceback  # imported now: a failed mount may hide the standard library

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 1, 2, 4, 32, 4096
MS_REC, MS_PRIVATE = 1 << 14, 1 << 18
PR_SET_NO_NEW_PRIVS = 38
# World-writable places: fresh tmpfs mounts in the program's mount namespace, so that
# nothing it writes outside its working directory survives it.
WORLD_WRITABLE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")

libc = ctypes.CDLL(None, use_errno=True)


def check(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def blocked_ancestor(directory):
    """The first ancestor of `directory` that other users cannot traverse, or None."""
    parts = os.path.abspath(directory).split("/")[1:]
    for depth in range(1, len(parts) + 1):
        ancestor = "/" + "/".join(parts[:depth])
        if not os.stat(ancestor).st_mode & 0o001:
            return ancestor
    return None


def same_directory(path, fd):
    try:
        here, there = os.stat(path), os.fstat(fd)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def make_reachable(directory, target_fd):
    """Let the unprivileged uid reach `directory` (the Python installation) read-only.

    An interpreter under a private home (/root/.pyenv/...) is unreachable for another uid,
    and one under /tmp is hidden by the fresh tmpfs. In the program's own mount namespace,
    the first ancestor it cannot traverse is covered by an empty tmpfs (which also hides
    the rest of that home), the path is recreated, and the directory itself (held open
    since before any mount) is bind-mounted back, read-only.
    """
    hidden = not same_directory(directory, target_fd)
    cover = blocked_ancestor(directory) if not hidden else None
    if not hidden and cover is None:
        return
    if cover is not None:
        check(libc.mount(b"tmpfs", cover.encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
                         b"size=64k,mode=755"), f"cover {cover}")
    os.makedirs(directory, mode=0o755, exist_ok=True)
    source = f"/proc/self/fd/{target_fd}".encode()
    check(libc.mount(source, directory.encode(), None, MS_BIND | MS_REC, None),
          f"bind {directory}")
    check(libc.mount(None, directory.encode(), None,
                     MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None),
          f"read-only {directory}")


def read_line_unbuffered(fd):
    """One line from fd, byte by byte, so that the next line stays for the runner."""
    data = b""
    while not data.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            break
        data += byte
    return data.decode().strip()


# The first stdin line is a secret that marks a genuine boot failure (a program cannot
# fake one to abort an evaluation: it never sees this line). The second is the runner's.
BOOT_SECRET = read_line_unbuffered(0)


def main():
    config = json.loads(sys.argv[1])
    limits = config["limits"]
    workdir_fd = os.open(config["workdir"], os.O_RDONLY | os.O_DIRECTORY)
    if config["full"]:
        check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET), "unshare(mount, network)")
        check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
        # Held open from inside the new namespace (a bind source must belong to it) and
        # before the tmpfs mounts, which may hide them.
        interpreter_fds = {directory: os.open(directory, os.O_PATH | os.O_DIRECTORY)
                           for directory in config["interpreter_dirs"]}
        options = f"size={limits['tmpfs_bytes']},mode=1777".encode()
        for path in WORLD_WRITABLE_DIRS:
            if os.path.isdir(path):
                check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
                                 options), f"mount tmpfs on {path}")
        for directory, target_fd in interpreter_fds.items():
            make_reachable(directory, target_fd)
            os.close(target_fd)
        uid = config["uid"]
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        if os.getuid() != uid or os.geteuid() != uid:
            raise OSError("uid did not change")
    else:
        check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNET), "unshare(user, network)")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    cpu = config["cpu_seconds"]
    for limit, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (limits["memory_bytes"],) * 2),
        (resource.RLIMIT_NPROC, (limits["max_processes"],) * 2),
        (resource.RLIMIT_FSIZE, (limits["max_file_bytes"],) * 2),
        (resource.RLIMIT_NOFILE, (limits["max_open_files"],) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    ):
        resource.setrlimit(limit, value)
    os.fchdir(workdir_fd)
    os.close(workdir_fd)
    status_fd = config["status_fd"]
    os.set_inheritable(status_fd, True)
    python = config["python"]
    # -S: no site-packages (programs get the standard library), and a 3x faster start.
    os.execv(python, [python, "-I", "-S", "_runner.py", str(status_fd)])


try:
    main()
except Exception as error:  # noqa: BLE001 - report any setup failure as one line
    where = traceback.extract_tb(error.__traceback__)[-1]
    sys.stdout.write(f"sandbox boot failed [{BOOT_SECRET}]: {type(error).__name__}: {error} "
                     f"(line {where.lineno}: {where.line})\n")
    sys.stdout.flush()
    os._exit(125)
