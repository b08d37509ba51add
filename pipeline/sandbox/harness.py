"""Run untrusted generated code (HumanEval, MBPP) and decide, out of its reach, whether its
tests passed.

Each (program, tests) pair runs as two processes in a fresh set of namespaces, forked from
a boot process ("zygote", `_sandbox_boot.py`) that this module starts with an explicit
minimal environment (`SANDBOX_ENVIRONMENT`; nothing of the harness's own environment,
such as WANDB_API_KEY or HF_TOKEN, reaches generated code):

* the **program process** (`_sandbox_runner.py`) runs the program, then answers requests;
* the **test process** (`_sandbox_tester.py`) runs the tests, in its own interpreter, with
  the program's global names visible as copies (plain data) or proxies (anything else,
  whose every operation is a request to the program process). Functions and objects the
  tests pass to the program stay in the test process, as proxies the program may call;
  containers the tests pass are written back in place after a call (see
  `_sandbox_protocol`).

The verdict is made where the program cannot reach: only the test process holds the tests,
a random nonce and the status pipe; it writes the nonce if and only if `exec` of the tests
returned normally, and the harness counts a pass only if the pipe holds exactly that
nonce. No code of the program ever runs in the test process, which is not dumpable, has
no capabilities and (as root) its own uid, so the program can neither trace it nor read
its memory or descriptors. The program process never holds the tests, the nonce or any
descriptor that reaches the harness's verdict. Everything the test process uses after the
tests began is its own. See pipeline/benchmarks/README.md ("Sandbox") for the threat model.

Containment: new mount, network (no interface up), PID, IPC and UTS namespaces; fresh tmpfs
on /tmp, /var/tmp, /dev/shm, /run/lock (the program's working directory is on its /tmp);
every other mount read-only; /proc hidden; rlimits on CPU, address space, processes, file
size (stdout/stderr go to a file, so this caps output), open files, no core dumps; a wall
clock timeout after which PID 1 of the job's namespace is killed, and with it, by the
kernel, every process the program left. As root (`isolation_level() == "full"`) the two
processes also get two random unprivileged uids. Without root ("reduced") a user namespace
stands in: see the README for exactly what that loses.
"""
from __future__ import annotations

import json
import os
import random
import secrets
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Iterable, Sequence

from pipeline.benchmarks.errors import SandboxError

_HERE = Path(__file__).resolve().parent
_BOOT_SCRIPT = _HERE / "_sandbox_boot.py"

# Random uids for sandboxed processes (as root): far above any real account, two per
# program (its process and its test process), so RLIMIT_NPROC concerns that program only.
_UID_RANGE = (3_000_000, 2_000_000_000)

# The whole environment of every sandboxed process (and of the boot process).
SANDBOX_ENVIRONMENT = MappingProxyType({
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp/work",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
})


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 10.0  # wall clock
    memory_bytes: int = 2 << 30  # RLIMIT_AS, per process
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
    status: str  # "passed", "failed", "timeout", "killed by SIGXXX"
    exit_code: int | None  # the test process's (negative: killed by that signal)
    output: str = ""  # stdout+stderr of both processes, truncated to max_output_bytes
    duration_s: float = 0.0
    extra: dict = field(default_factory=dict)


def isolation_level() -> str:
    """'full' (root: namespaces + separate unprivileged uids) or 'reduced' (user namespace)."""
    return "full" if os.geteuid() == 0 else "reduced"


class _Zygote:
    """One boot process; runs one job at a time."""

    def __init__(self, full: bool):
        ours, theirs = socket.socketpair()
        config = {"full": full,
                  "interpreter_dirs": sorted({os.path.realpath(sys.base_prefix),
                                              os.path.realpath(sys.prefix)})}
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_BOOT_SCRIPT), json.dumps(config),
                 str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), env=dict(SANDBOX_ENVIRONMENT),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                start_new_session=True, cwd="/")
        except OSError as error:
            ours.close()
            raise SandboxError(f"sandbox boot process could not start: {error}") from None
        finally:
            theirs.close()
        self.process = process
        self.sock = ours

    def run(self, job: dict, fds: list[int], wait_s: float) -> dict:
        payload = json.dumps(job).encode()
        try:
            socket.send_fds(self.sock, [struct.pack(">I", len(payload))], fds)
            self.sock.sendall(payload)
            self.sock.settimeout(wait_s)
            (size,) = struct.unpack(">I", self._receive(4))
            return json.loads(self._receive(size))
        except (OSError, ValueError, EOFError) as error:
            self.close()
            raise SandboxError(f"sandbox boot process failed: {type(error).__name__}: "
                               f"{error}") from None

    def _receive(self, size: int) -> bytes:
        chunks = []
        while size:
            chunk = self.sock.recv(size)
            if not chunk:
                raise EOFError("the boot process ended")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.process.wait()


def _random_uids() -> tuple[int, int]:
    program_uid = random.randrange(*_UID_RANGE)
    test_uid = random.randrange(*_UID_RANGE)
    if test_uid == program_uid:
        test_uid = program_uid + 1 if program_uid + 1 < _UID_RANGE[1] else program_uid - 1
    return program_uid, test_uid


def _read_available(fd: int, limit: int) -> bytes:
    os.set_blocking(fd, False)
    data = b""
    try:
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except BlockingIOError:
        pass
    return data


def _execute(zygote: _Zygote, program: str, tests: str, limits: SandboxLimits,
             full: bool) -> ExecutionResult:
    nonce = secrets.token_hex(16).encode()
    program_uid, test_uid = _random_uids() if full else (None, None)
    job = {"program": program, "program_uid": program_uid, "test_uid": test_uid,
           "limits": {**asdict(limits), "cpu_seconds": limits.cpu_seconds}}
    start = time.monotonic()
    with tempfile.TemporaryFile() as output:
        status_read, status_write = os.pipe()
        nonce_read, nonce_write = os.pipe()
        tests_fd = os.memfd_create("tests", os.MFD_CLOEXEC)
        try:
            os.write(nonce_write, nonce)
            os.close(nonce_write)
            data = tests.encode("utf-8")
            view = memoryview(data)
            while view:
                view = view[os.write(tests_fd, view):]
            os.lseek(tests_fd, 0, os.SEEK_SET)
            reply = zygote.run(job, [output.fileno(), status_write, tests_fd, nonce_read],
                               wait_s=limits.timeout_s + 60)
        finally:
            for fd in (status_write, tests_fd, nonce_read):
                os.close(fd)
        try:
            proof = _read_available(status_read, 256)
        finally:
            os.close(status_read)
        raw = os.pread(output.fileno(), limits.max_output_bytes + 1, 0)
    duration = time.monotonic() - start
    if reply.get("boot_error"):
        text = "; ".join(line.strip() for line in str(reply["boot_error"]).splitlines()
                         if line.strip())
        raise SandboxError(f"sandbox boot failed: {text[:1000]}")
    output_text = raw[:limits.max_output_bytes].decode("utf-8", errors="replace")
    if len(raw) > limits.max_output_bytes:
        output_text += "\n[output truncated]"
    timed_out = bool(reply.get("timed_out"))
    exit_code = reply.get("exit_code")
    signal_number = reply.get("signal")
    passed = not timed_out and exit_code == 0 and proof == nonce
    if passed:
        status = "passed"
    elif timed_out:
        status = "timeout"
    elif signal_number is not None:
        try:
            status = f"killed by {signal.Signals(signal_number).name}"
        except ValueError:
            status = f"killed by signal {signal_number}"
        exit_code = -signal_number
    else:
        status = "failed"
    return ExecutionResult(passed=passed, status=status, exit_code=exit_code,
                           output=output_text, duration_s=duration)


def run_programs(jobs: Sequence[tuple[str, str]], limits: SandboxLimits = SandboxLimits(),
                 workers: int = 2, progress: bool = True, desc: str = "executing"
                 ) -> list[ExecutionResult]:
    """Run (program, tests) pairs, `workers` at a time, each in its own sandbox.

    The pairs of one call are forks of at most `workers` boot processes started for this
    call (so they share those interpreters' hash seeds); separate calls never share one.
    """
    if workers < 1:
        raise SandboxError(f"workers must be >= 1, got {workers}")
    jobs = list(jobs)
    if not jobs:
        return []
    full = isolation_level() == "full"
    idle: list[_Zygote] = []
    every: list[_Zygote] = []
    lock = threading.Lock()

    def one(program: str, tests: str) -> ExecutionResult:
        with lock:
            zygote = idle.pop() if idle else None
        if zygote is None:
            zygote = _Zygote(full)
            with lock:
                every.append(zygote)
        try:
            result = _execute(zygote, program, tests, limits, full)
        except SandboxError:
            raise  # the zygote closed itself if it broke
        except OSError as error:  # pipes, memfd, the output file: the harness's own resources
            zygote.close()
            raise SandboxError(f"sandbox: could not set up a program's run: {error.strerror or error} "
                               "(out of file descriptors? see `ulimit -n`)") from None
        with lock:
            idle.append(zygote)
        return result

    try:
        with ThreadPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
            futures = [pool.submit(one, program, tests) for program, tests in jobs]
            if progress:
                from tqdm.auto import tqdm
                futures_iter = tqdm(futures, desc=desc)
            else:
                futures_iter = futures
            return [f.result() for f in futures_iter]
    finally:
        for zygote in every:
            zygote.close()


def run_program(program: str, tests: str = "", limits: SandboxLimits = SandboxLimits()
                ) -> ExecutionResult:
    """Run `program`, then `tests` against it, in a fresh sandbox.

    Passed means: the tests, run in the test process with the program's names visible,
    ran to the end without an exception (the test process's nonce is the proof).
    """
    return run_programs([(program, tests)], limits, workers=1, progress=False)[0]


def limits_from_config(values: dict | None) -> SandboxLimits:
    """Build limits from a config mapping; unknown keys are an error, not ignored."""
    values = dict(values or {})
    known = set(SandboxLimits.__dataclass_fields__)
    unknown = sorted(set(values) - known)
    if unknown:
        raise SandboxError(f"unknown sandbox limit(s) {unknown}; known: {sorted(known)}")
    return SandboxLimits(**values)


__all__: Iterable[str] = ["SandboxLimits", "ExecutionResult", "run_program", "run_programs",
                          "isolation_level", "limits_from_config", "SANDBOX_ENVIRONMENT"]
