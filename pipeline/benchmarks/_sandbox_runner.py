"""Runs inside the sandbox: the program, then its tests, then proves the tests completed.

Written to the program's working directory and run as `python -I _runner.py STATUS_FD`.
The nonce arrives on stdin and is read before any program code runs; stdin is then
replaced by /dev/null. The nonce is written to STATUS_FD only if the program and its tests
ran to the end with no exception, no SystemExit (sys.exit(0) before the asserts is not a
pass) and builtins left as they were.
"""
import builtins
import os
import sys


def _builtins_changed(snapshot, namespace):
    if namespace.get("__builtins__") is not builtins:
        return True  # a replaced __builtins__ would change what the tests' names mean
    current = vars(builtins)
    return current.keys() != snapshot.keys() or any(
        current[name] is not value for name, value in snapshot.items())


def _run_stage(filename, namespace, snapshot):
    with open(filename, encoding="utf-8") as source_file:
        code = compile(source_file.read(), filename, "exec")
    try:
        exec(code, namespace)
    except SystemExit as exit_request:
        sys.stderr.write(f"sandbox: SystemExit({exit_request.code!r}) in {filename}: "
                         "tests did not complete\n")
        sys.stderr.flush()
        os._exit(3)
    if _builtins_changed(snapshot, namespace):
        sys.stderr.write(f"sandbox: {filename} modified builtins\n")
        sys.stderr.flush()
        os._exit(4)


def _main():
    status_fd = int(sys.argv[1])
    nonce = sys.stdin.readline().strip().encode()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    snapshot = dict(vars(builtins))
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    _run_stage("program.py", namespace, snapshot)
    _run_stage("tests.py", namespace, snapshot)
    for stream in (sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - the program may have closed them
            pass
    os.write(status_fd, nonce)
    os._exit(0)  # no atexit handlers of the program after the proof


_main()
