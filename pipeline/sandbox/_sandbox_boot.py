"""The sandbox's boot process (`python -I -S _sandbox_boot.py CONFIG_JSON CONTROL_FD`).

A long-lived "zygote" started by sandbox.py with an explicit minimal environment. It loads
everything the sandboxed processes need once, then, for each job received on its control
socket (a JSON message and four file descriptors: captured output, status pipe, tests,
nonce), forks the process tree of one program:

    zygote ── job: new mount, network, PID, IPC and UTS namespaces (plus a user namespace
              │    without root); fresh tmpfs on /tmp, /var/tmp, /dev/shm, /run/lock; every
              │    other mount read-only; /proc hidden; wall-clock timeout
              └─ init (PID 1 of the new PID namespace: when it ends, the kernel kills
                 │     every process left in the namespace)
                 ├─ test process (_sandbox_tester): the only holder of the tests, the nonce
                 │     and the status pipe; own uid as root; not dumpable; no capabilities
                 └─ program process (_sandbox_runner): the generated program; own uid as
                       root; no capabilities; holds only stdout/stderr and its channel

Set-up failures are reported on a pipe that no process running untrusted code holds, so a
program cannot fake one (nor, therefore, abort an evaluation with a fake one).
"""
import ctypes
import json
import os
import re
import resource
import select
import signal
import socket
import struct
import sys
import time
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import _sandbox_protocol  # noqa: E402,F401 - loaded now: both sides are forks of this process
import _sandbox_runner  # noqa: E402
import _sandbox_tester  # noqa: E402

sys.path.remove(_HERE)

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_NOATIME, MS_NODIRATIME, MS_REC, MS_PRIVATE = 1024, 2048, 1 << 14, 1 << 18
MS_RELATIME, MS_STRICTATIME = 1 << 21, 1 << 24
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_MOUNT_FLAGS = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME,
                "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}
# World-writable places: fresh tmpfs mounts in the job's mount namespace.
WORLD_WRITABLE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
WORKDIR = "/tmp/work"  # the program's working directory, on its private /tmp
_UID_INSIDE = 1000  # without root: the one uid mapped in the job's user namespace

libc = ctypes.CDLL(None, use_errno=True)
_exit = os._exit  # bound now: a program may replace os._exit in its own process


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def check(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def mount(source, target, fstype, flags, data, what):
    def raw(text):
        return text.encode() if isinstance(text, str) else text
    check(libc.mount(raw(source), raw(target), raw(fstype), flags, raw(data)), what)


def prctl(option, value, what):
    check(libc.prctl(option, value, 0, 0, 0), what)


def die_with_parent():
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "die with parent")


def drop_capabilities():
    """No capabilities at all, in any user namespace, for this process and its children."""
    for capability in range(64):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    header, data = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    check(libc.capset(ctypes.byref(header), data), "capset")
    check(libc.capget(ctypes.byref(header), data), "capget")
    if any(d.effective or d.permitted or d.inheritable for d in data):
        raise OSError("capabilities remained after dropping them")


def become(uid, groups=()):
    os.setgroups(list(groups))
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid):
        raise OSError("uid did not change")


def lock_down(limits, processes):
    prctl(PR_SET_NO_NEW_PRIVS, 1, "no_new_privs")
    cpu = limits["cpu_seconds"]
    for limit, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (limits["memory_bytes"],) * 2),
        (resource.RLIMIT_NPROC, (processes,) * 2),
        (resource.RLIMIT_FSIZE, (limits["max_file_bytes"],) * 2),
        (resource.RLIMIT_NOFILE, (limits["max_open_files"],) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
    ):
        resource.setrlimit(limit, value)


def keep_only(fds):
    """Close every file descriptor but `fds` (and stdin, stdout, stderr)."""
    low = 0
    for fd in sorted({0, 1, 2, *fds}):
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


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
    """Let the unprivileged uids reach `directory` (the Python installation) read-only.

    An interpreter under a private home (/root/.pyenv/...) is unreachable for another uid,
    and one under /tmp is hidden by the fresh tmpfs. The first ancestor the uids cannot
    traverse is covered by an empty tmpfs (which also hides the rest of that home), the
    path is recreated, and the directory itself (held open since before any mount) is
    bind-mounted back, read-only.
    """
    hidden = not same_directory(directory, target_fd)
    cover = blocked_ancestor(directory) if not hidden else None
    if not hidden and cover is None:
        return
    if cover is not None:
        mount("tmpfs", cover, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=755",
              f"cover {cover}")
    os.makedirs(directory, mode=0o755, exist_ok=True)
    mount(f"/proc/self/fd/{target_fd}", directory, None, MS_BIND | MS_REC, None,
          f"bind {directory}")
    mount(None, directory, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
          None, f"read-only {directory}")


def _unescape(path):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def enter_namespaces(full):
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    check(libc.unshare(flags | (0 if full else CLONE_NEWUSER)), "unshare")
    if not full:  # map our uid to one unprivileged uid inside (files need an owner)
        for name, text in (("setgroups", "deny"), ("uid_map", f"{_UID_INSIDE} {uid} 1"),
                           ("gid_map", f"{_UID_INSIDE} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)


def prepare_filesystem(config, limits, program_uid):
    """The job's view of the filesystem: read-only but for fresh, private tmpfs mounts."""
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
        mounts = [line.split() for line in f]
    mount(None, "/", None, MS_REC | MS_PRIVATE, None, "make / private")
    full = config["full"]
    # Held open from inside the new namespace (a bind source must belong to it) and
    # before the tmpfs mounts, which may hide them.
    interpreter_fds = {d: os.open(d, os.O_PATH | os.O_DIRECTORY)
                       for d in config["interpreter_dirs"]} if full else {}
    options = f"size={limits['tmpfs_bytes']},mode=1777"
    covered = set()
    for path in WORLD_WRITABLE_DIRS:
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, options, f"tmpfs on {path}")
            covered.add(path)
    for directory, fd in interpreter_fds.items():
        make_reachable(directory, fd)
        os.close(fd)
    for fields in mounts:
        point, flags = _unescape(fields[4]), fields[5].split(",")
        if point in covered or "ro" in flags or point == "/proc" or point.startswith("/proc/"):
            continue
        remount = MS_REMOUNT | MS_BIND | MS_RDONLY
        for flag in flags:
            remount |= _MOUNT_FLAGS.get(flag, 0)
        try:
            mount(None, point, None, remount, None, f"read-only {point}")
        except OSError:
            if os.path.exists(point):  # a mount point that has since disappeared is fine
                raise
    os.mkdir(WORKDIR, 0o770)  # the program's uid, and the test process through its group
    os.chmod(WORKDIR, 0o770)
    if full:
        os.chown(WORKDIR, program_uid, program_uid)
    mount("tmpfs", "/proc", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
          "size=4k,mode=555", "hide /proc")


def report_setup_failure(error_fd, who, error):
    try:
        where = traceback.extract_tb(error.__traceback__)[-1]
        text = (f"{who}: {type(error).__name__}: {error} "
                f"(line {where.lineno}: {where.line})\n")
        os.write(error_fd, text.encode("utf-8", "replace")[:4000])
    finally:
        os._exit(125)


def test_process(job, channel_fd, status_fd, tests_fd, nonce_fd, error_fd):
    try:
        keep_only({channel_fd, status_fd, tests_fd, nonce_fd, error_fd})
        if job["full"]:  # its own uid; the program's group, for the working directory
            become(job["test_uid"], groups=[job["program_uid"]])
        drop_capabilities()
        prctl(PR_SET_DUMPABLE, 0, "not dumpable")  # after the uid change, which resets it
        lock_down(job["limits"], job["limits"]["max_processes"])
        os.umask(0o002)  # files either side writes in the working directory: both may use
        os.chdir(WORKDIR)  # the tests may read what the program wrote, as in a plain run
        os.close(error_fd)
    except BaseException as error:  # noqa: BLE001
        report_setup_failure(error_fd, "test process", error)
    try:
        _sandbox_tester.main(channel_fd, status_fd, tests_fd, nonce_fd)
    finally:
        _exit(1)


def program_process(job, channel_fd, error_fd):
    try:
        keep_only({channel_fd, error_fd})
        if job["full"]:
            become(job["program_uid"])
        drop_capabilities()
        lock_down(job["limits"], job["limits"]["max_processes"])
        os.umask(0o002)
        os.chdir(WORKDIR)
        os.close(error_fd)
    except BaseException as error:  # noqa: BLE001
        report_setup_failure(error_fd, "program process", error)
    try:
        _sandbox_runner.main(channel_fd, job["program"])
    finally:
        _exit(1)


def init_process(job, status_fd, tests_fd, nonce_fd, error_fd):
    """PID 1 of the job: starts the test process, then the program's; ends with the tests.

    Signals from inside its namespace reach PID 1 only where it handles them, so it handles
    none (Python's SIGINT handler is reset): without root the program shares its uid and
    could otherwise interrupt it. It never returns into its caller's code.
    """
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        die_with_parent()
        test_end, program_end = socket.socketpair()
        tester = os.fork()
        if tester == 0:
            test_process(job, test_end.fileno(), status_fd, tests_fd, nonce_fd, error_fd)
        for fd in (status_fd, tests_fd, nonce_fd):
            os.close(fd)  # from here on only the test process holds them
        test_end.close()
        program = os.fork()
        if program == 0:
            program_process(job, program_end.fileno(), error_fd)
        program_end.close()
        os.close(error_fd)
        if not job["full"]:
            drop_capabilities()
    except BaseException as error:  # noqa: BLE001
        report_setup_failure(error_fd, "init", error)
    try:
        while True:  # reap everything; end with the test process
            pid, status = os.wait()
            if pid == tester:
                if os.WIFSIGNALED(status):
                    _exit(128 + os.WTERMSIG(status))
                _exit(min(os.WEXITSTATUS(status), 127))
    finally:
        _exit(126)


def _wait(pid, timeout_s):
    """Wait until child `pid` ends or the timeout passes; True if it ended."""
    pidfd = os.pidfd_open(pid)
    try:
        return bool(select.select([pidfd], [], [], max(timeout_s, 0.0))[0])
    finally:
        os.close(pidfd)


def job_process(config, job, fds, result_fd, zygote_pid):
    output_fd, status_fd, tests_fd, nonce_fd = fds
    result = {}
    try:
        die_with_parent()
        if os.getppid() != zygote_pid:
            os._exit(1)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        error_read, error_write = os.pipe()
        keep_only({status_fd, tests_fd, nonce_fd, result_fd, error_read, error_write})
        job = {**job, "full": config["full"]}
        begin = time.monotonic()
        if not config["full"]:
            prctl(PR_SET_DUMPABLE, 1, "dumpable")  # the zygote is not; see below
        enter_namespaces(config["full"])
        # Not dumpable only now: without root, /proc/self/uid_map must stay writable
        # (a non-dumpable process's /proc files belong to root) until it is written.
        prctl(PR_SET_DUMPABLE, 0, "not dumpable")
        namespaces = time.monotonic()
        prepare_filesystem(config, job["limits"], job.get("program_uid"))
        start = time.monotonic()
        result["setup_s"] = [namespaces - begin, start - namespaces]
        init = os.fork()
        if init == 0:
            init_process(job, status_fd, tests_fd, nonce_fd, error_write)
        for fd in (status_fd, tests_fd, nonce_fd, error_write):
            os.close(fd)
        timed_out = not _wait(init, job["limits"]["timeout_s"])
        if timed_out:
            os.kill(init, signal.SIGKILL)  # PID 1 gone: the kernel kills the namespace
        _, status = os.waitpid(init, 0)
        result["duration_s"] = time.monotonic() - start
        result["timed_out"] = timed_out
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) < 128:
            result["exit_code"] = os.WEXITSTATUS(status)
        elif os.WIFEXITED(status):
            result["signal"] = os.WEXITSTATUS(status) - 128  # the test process's
        else:
            result["signal"] = os.WTERMSIG(status)
        os.set_blocking(error_read, False)
        try:
            errors = os.read(error_read, 8192).decode("utf-8", "replace").strip()
        except BlockingIOError:
            errors = ""
        if errors:
            result["boot_error"] = errors
    except BaseException as error:  # noqa: BLE001
        where = traceback.extract_tb(error.__traceback__)[-1]
        result["boot_error"] = (f"job: {type(error).__name__}: {error} "
                                f"(line {where.lineno}: {where.line})")
    try:
        os.write(result_fd, json.dumps(result).encode())
    finally:
        os._exit(0)


def _receive_exact(sock, size):
    chunks = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def zygote(config, control_fd):
    sock = socket.socket(fileno=control_fd)
    prctl(PR_SET_DUMPABLE, 0, "not dumpable")
    while True:
        try:
            header, fds, _, _ = socket.recv_fds(sock, 4, 8)
            if len(header) < 4:
                header += _receive_exact(sock, 4 - len(header)) if header else b""
            if not header:
                os._exit(0)  # the harness closed the socket
            (size,) = struct.unpack(">I", header)
            job = json.loads(_receive_exact(sock, size))
        except (EOFError, ConnectionError):
            os._exit(0)
        result_read, result_write = os.pipe()
        job_pid = os.fork()
        if job_pid == 0:
            sock.close()
            os.close(result_read)
            job_process(config, job, fds, result_write, os.getppid())
        os.close(result_write)
        for fd in fds:
            os.close(fd)
        os.waitpid(job_pid, 0)
        with os.fdopen(result_read, "rb") as result:
            data = result.read()
        try:
            reply = json.loads(data)
        except ValueError:
            reply = {"boot_error": "job process ended without a result"}
        payload = json.dumps(reply).encode()
        try:
            sock.sendall(struct.pack(">I", len(payload)) + payload)
        except OSError:
            os._exit(0)


if __name__ == "__main__":
    zygote(json.loads(sys.argv[1]), int(sys.argv[2]))
