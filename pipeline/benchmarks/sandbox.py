"""Run untrusted generated code (HumanEval, MBPP) and tell whether its tests really completed.

Each program runs in its own process, started through a small boot script
(`_sandbox_boot.py`) that, before handing over to a fresh interpreter:

* when the harness runs as root (as here and in CI): enters a new network namespace
  (no interface but a downed loopback: no network at all) and a new mount namespace in
  which /tmp, /var/tmp, /dev/shm and /run/lock are fresh tmpfs mounts (so nothing written
  there outlives the program), then drops to a random unprivileged uid/gid that owns
  nothing on the host but the program's throw-away working directory. That uid cannot
  write or delete the project's files, cannot signal the harness, and its own
  RLIMIT_NPROC (which does not bind root) contains fork bombs. `no_new_privs` is set.
* always: resource limits on CPU time, address space (memory), processes, file size
  (stdout/stderr go to a file, so RLIMIT_FSIZE caps the output too), open files, no core
  dumps; a new session, so the whole process group is killed on timeout.

After the program ends, every process still owned by its uid (daemons that left the
process group) is killed, and the working directory is deleted.

"A pass must prove the tests completed": the harness sends a random nonce on the
program's stdin, which the runner (`_sandbox_runner.py`) reads and hides before any
program code runs, and writes to a status file only after the tests ran to the end
without exception, SystemExit, or tampering with builtins. A pass is exit code 0 AND that
nonce. Limitation (documented, not fixed): program code runs in the runner's process, so a
program written to introspect the runner's frames could recover the nonce; the
protection targets programs that exit early or cheat through builtins, not an adversary
that studies this harness.

Without root, the boot script falls back to a user+network namespace (network still
blocked) and rlimits, but without uid separation: programs could then touch the user's
files and signal the harness. `isolation_level()` reports which mode is in force.
"""
from __future__ import annotations

import json
import os
import random
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from tqdm.auto import tqdm

from pipeline.benchmarks.errors import SandboxError

_HERE = Path(__file__).resolve().parent
_BOOT_SCRIPT = _HERE / "_sandbox_boot.py"
_RUNNER_SOURCE = (_HERE / "_sandbox_runner.py").read_text(encoding="utf-8")
_BOOT_FAILURE_EXIT = 125  # the boot script's exit code when isolation could not be set up

# Random uids for sandboxed programs: far above any real account, one per program, so
# RLIMIT_NPROC and "kill everything of this uid" concern that program only.
_UID_RANGE = (3_000_000, 2_000_000_000)


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 10.0  # wall clock
    memory_bytes: int = 2 << 30  # RLIMIT_AS
    max_processes: int = 32  # RLIMIT_NPROC (processes and threads of the program's uid)
    max_file_bytes: int = 8 << 20  # RLIMIT_FSIZE: any file, including captured stdout/stderr
    max_output_bytes: int = 64 << 10  # how much captured output is kept in the result
    max_open_files: int = 128  # RLIMIT_NOFILE
    tmpfs_bytes: int = 32 << 20  # size of each fresh /tmp-like mount

    @property
    def cpu_seconds(self) -> int:
        return int(self.timeout_s) + 1


@dataclass
class ExecutionResult:
    passed: bool
    status: str  # "passed", "failed", "timeout", "killed by SIGXXX", "incomplete"
    exit_code: int | None
    output: str = ""  # stdout+stderr, truncated to max_output_bytes
    duration_s: float = 0.0
    extra: dict = field(default_factory=dict)


def isolation_level() -> str:
    """'full' (root: namespaces + unprivileged uid) or 'reduced' (no uid separation)."""
    return "full" if os.geteuid() == 0 else "reduced"


def _processes_of_uid(uid: int) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid == uid:
                pids.append(int(entry.name))
        except OSError:
            continue  # the process ended meanwhile
    return pids


_KILL_ALL_OF_UID = (
    "import os, signal, sys\n"
    "uid = int(sys.argv[1])\n"
    "os.setgroups([]); os.setgid(uid); os.setuid(uid)\n"
    # kill(-1) reaches every process this uid may signal, i.e. its own, except the caller.
    "for _ in range(200):\n"
    "    try: os.kill(-1, signal.SIGKILL)\n"
    "    except ProcessLookupError: break\n"
)


_PR_SET_CHILD_SUBREAPER = 36
_subreaper_set = False


def _become_subreaper() -> None:
    """Adopt the orphans of sandboxed programs, so that we can reap them after killing them.

    Without this, a daemon a program left behind is reparented to init, which in a
    container may never reap it: killed, it would stay a zombie.
    """
    global _subreaper_set
    if not _subreaper_set:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        _subreaper_set = True


def _parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _kill_leftovers(uid: int, deadline_s: float = 10.0) -> None:
    """Kill, and reap, every process still running under the program's uid."""
    if not _processes_of_uid(uid):
        return
    subprocess.run([sys.executable, "-I", "-S", "-c", _KILL_ALL_OF_UID, str(uid)],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=30, check=False)
    give_up = time.monotonic() + deadline_s
    while time.monotonic() < give_up:
        remaining = _processes_of_uid(uid)
        if not remaining:
            return
        for pid in remaining:
            if _parent_pid(pid) == os.getpid():  # an adopted orphan: reap it
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        time.sleep(0.01)


def _wait_for_exit(process: subprocess.Popen, timeout_s: float) -> bool:
    """Wait until the process exits or the timeout passes; True if it exited.

    A pidfd wakes us the moment the process ends (Popen.wait(timeout) polls with sleeps,
    which costs tens of milliseconds per program).
    """
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        try:
            process.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout_s)
        return bool(ready)
    finally:
        os.close(pidfd)


def _read_bounded(path: Path, limit: int) -> tuple[str, bool]:
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    return data[:limit].decode("utf-8", errors="replace"), len(data) > limit


def run_program(program: str, tests: str = "", limits: SandboxLimits = SandboxLimits()
                ) -> ExecutionResult:
    """Run `program` then `tests` (same namespace) in a fresh sandboxed process.

    Passed means: exit code 0 and the runner's proof that `tests` ran to the end.
    """
    full = isolation_level() == "full"
    uid = random.randrange(*_UID_RANGE) if full else os.getuid()
    if full:
        _become_subreaper()
    nonce = secrets.token_hex(16)
    boot_secret = secrets.token_hex(16)  # marks genuine boot failures (see _sandbox_boot)
    host_dir = Path(tempfile.mkdtemp(prefix="calm_sandbox_"))  # 0700, harness only
    try:
        workdir = host_dir / "work"
        workdir.mkdir()
        (workdir / "program.py").write_text(program, encoding="utf-8")
        (workdir / "tests.py").write_text(tests, encoding="utf-8")
        (workdir / "_runner.py").write_text(_RUNNER_SOURCE, encoding="utf-8")
        if full:
            for path in [workdir, *workdir.iterdir()]:
                os.chown(path, uid, uid)
        output_path = host_dir / "output"
        status_path = host_dir / "status"
        boot_config = {
            "full": full, "uid": uid, "workdir": str(workdir),
            "limits": asdict(limits), "cpu_seconds": limits.cpu_seconds,
            "python": sys.executable,
            "interpreter_dirs": sorted({os.path.realpath(sys.base_prefix),
                                        os.path.realpath(sys.prefix)}),
        }
        start = time.monotonic()
        timed_out = False
        with open(output_path, "wb") as output_file, open(status_path, "wb") as status_file:
            status_fd = status_file.fileno()
            boot_config["status_fd"] = status_fd
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_BOOT_SCRIPT), json.dumps(boot_config)],
                stdin=subprocess.PIPE, stdout=output_file, stderr=subprocess.STDOUT,
                pass_fds=(status_fd,), start_new_session=True, cwd="/",
            )
            try:
                process.stdin.write(f"{boot_secret}\n{nonce}\n".encode())
                process.stdin.close()
            except BrokenPipeError:
                pass  # the program died at once; its exit status tells why
            try:
                timed_out = not _wait_for_exit(process, limits.timeout_s)
            finally:
                try:
                    os.killpg(process.pid, signal.SIGKILL)  # the whole group, always
                except (ProcessLookupError, PermissionError):
                    pass
                process.wait()
                if full:
                    _kill_leftovers(uid)
        duration = time.monotonic() - start
        output, truncated = _read_bounded(output_path, limits.max_output_bytes)
        proof = status_path.read_bytes()[:256].decode("ascii", errors="replace")
        exit_code = process.returncode
        marker = f"sandbox boot failed [{boot_secret}]"
        if exit_code == _BOOT_FAILURE_EXIT and output.startswith(marker):
            raise SandboxError("sandbox boot failed" + output.splitlines()[0][len(marker):])
        passed = not timed_out and exit_code == 0 and proof == nonce
        if passed:
            status = "passed"
        elif timed_out:
            status = "timeout"
        elif exit_code is not None and exit_code < 0:
            status = f"killed by {signal.Signals(-exit_code).name}"
        elif exit_code == 0:
            status = "incomplete"  # exit 0 without the proof that the tests completed
        else:
            status = "failed"
        return ExecutionResult(passed=passed, status=status, exit_code=exit_code,
                               output=output + ("\n[output truncated]" if truncated else ""),
                               duration_s=duration)
    finally:
        shutil.rmtree(host_dir, ignore_errors=True)


def run_programs(jobs: Sequence[tuple[str, str]], limits: SandboxLimits = SandboxLimits(),
                 workers: int = 2, progress: bool = True, desc: str = "executing"
                 ) -> list[ExecutionResult]:
    """Run (program, tests) pairs in parallel (each in its own sandboxed process)."""
    if workers < 1:
        raise SandboxError(f"workers must be >= 1, got {workers}")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(run_program, program, tests, limits) for program, tests in jobs]
        return [f.result() for f in tqdm(futures, desc=desc, disable=not progress)]


def limits_from_config(values: dict | None) -> SandboxLimits:
    """Build limits from a config mapping; unknown keys are an error, not ignored."""
    values = dict(values or {})
    known = set(SandboxLimits.__dataclass_fields__)
    unknown = sorted(set(values) - known)
    if unknown:
        raise SandboxError(f"unknown sandbox limit(s) {unknown}; known: {sorted(known)}")
    return SandboxLimits(**values)


__all__: Iterable[str] = ["SandboxLimits", "ExecutionResult", "run_program", "run_programs",
                          "isolation_level", "limits_from_config"]
