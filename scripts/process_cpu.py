"""Where does a command's CPU go, Python process by Python process? (how docs/testing.md's suite accounting was made)

`install` adds a .pth file to this virtualenv: from then on every Python process started with PROCESS_CPU_LOG=<file>
in its environment appends one JSON line at exit (its argv, the test that started it, wall and CPU seconds);
without the variable nothing happens. `summarize` adds them up by kind of process and by the test that started
them. A process killed by a signal, or started with -S or -I (the code sandbox's programs), writes no line.

    python scripts/process_cpu.py install
    PROCESS_CPU_LOG=/tmp/cpu.jsonl make test
    python scripts/process_cpu.py summarize /tmp/cpu.jsonl
    python scripts/process_cpu.py uninstall
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import sysconfig
import time
from pathlib import Path

PTH = Path(sysconfig.get_paths()["purelib"]) / "zz_process_cpu.pth"
LINE = ("import os; os.environ.get('PROCESS_CPU_LOG') and "
        f"__import__('runpy').run_path({str(Path(__file__).resolve())!r}, run_name='process_cpu_hook')\n")


def _hook() -> None:
    """Runs at interpreter start (through the .pth line): logs this process at exit."""
    import atexit
    import resource

    if getattr(sys, "_process_cpu_hooked", False):  # site may read the .pth twice (purelib and platlib)
        return
    sys._process_cpu_hooked = True
    start, path = time.time(), os.environ["PROCESS_CPU_LOG"]

    def log():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        line = json.dumps({"argv": list(getattr(sys, "orig_argv", sys.argv))[:8], "pid": os.getpid(),
                           "test": os.environ.get("PYTEST_CURRENT_TEST"), "worker": os.environ.get("PYTEST_XDIST_WORKER"),
                           "wall": time.time() - start, "cpu": usage.ru_utime + usage.ru_stime}) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)  # one write: whole lines from every process
        os.write(fd, line.encode())
        os.close(fd)

    atexit.register(log)


def _kind(argv: list[str]) -> str:
    if "-m" in argv[:-1]:
        module = argv[argv.index("-m") + 1]
        return f"-m {module}" + (f" {argv[argv.index('-m') + 2]}" if module == "dvc" and len(argv) > argv.index("-m") + 2 else "")
    if len(argv) > 1 and Path(argv[1]).name == "dvc":
        return f"dvc {argv[2] if len(argv) > 2 else ''}"
    if "-c" in argv:
        return "-c " + argv[argv.index("-c") + 1].strip().splitlines()[0][:40]
    return " ".join(Path(a).name for a in argv[1:3])


def summarize(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    kinds, tests = collections.defaultdict(lambda: [0, 0.0]), collections.defaultdict(lambda: [0, 0.0])
    for r in rows:
        kind = "an xdist worker's own tests" if r["worker"] and not r["test"] else _kind(r["argv"])
        kinds[kind][0] += 1
        kinds[kind][1] += r["cpu"]
        if r["test"]:
            test = tests[r["test"].split("::")[0]]
            test[0] += 1
            test[1] += r["cpu"]
    print(f"{len(rows)} Python processes, {sum(r['cpu'] for r in rows):.0f} CPU-s")
    for title, table in (("by kind", kinds), ("started by a test, by its file", tests)):
        print(f"-- {title}")
        for name, (count, cpu) in sorted(table.items(), key=lambda item: -item[1][1])[:20]:
            print(f"{cpu:8.1f} CPU-s {count:5d} processes  {name}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install")
    sub.add_parser("uninstall")
    sub.add_parser("summarize").add_argument("log", type=Path)
    args = parser.parse_args(argv)
    if args.command == "install":
        PTH.write_text(LINE)
        print(f"wrote {PTH}")
    elif args.command == "uninstall":
        PTH.unlink(missing_ok=True)
        print(f"removed {PTH}")
    elif not args.log.is_file():
        sys.exit(f"error: {args.log} not found")
    else:
        summarize(args.log)
    return 0


if __name__ == "process_cpu_hook":
    _hook()
elif __name__ == "__main__":
    sys.exit(main())
