"""The hostile battery's programs (used by tests/unit/sandbox/test_harness_hostile.py, also as an unprivileged
user without pytest): each solves nothing and tries to be scored as passing through the
harness's machinery. See tests/unit/sandbox/test_harness_hostile.py for the threat model."""

CORRECT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return 0\n"
MBPP_TESTS = "assert add(2, 3) == 5\nassert add(-1, 1) == 0\nassert add(10, 5) == 15\n"
HUMANEVAL_TESTS = ("METADATA = {}\n\ndef check(candidate):\n    assert candidate(2, 3) == 5\n"
                   "    assert candidate(-1, 1) == 0\n\ncheck(add)\n")
# A task whose tests hand the program their own function (a key), as some tests do.
CALLBACK_CORRECT = "def apply(f, x):\n    return f(x)\n"
CALLBACK_TESTS = "assert apply(lambda v: v + 1, 2) == 3\nassert apply(abs, -4) == 4\n"

# Plausible nonces: what a forger would write wherever it can.
_FORGE_ALL_FDS = (
    "def _forge():\n"
    "    import os, gc\n"
    "    guesses = [o for o in gc.get_objects() if isinstance(o, (bytes, str)) and len(o) == 32]\n"
    "    for fd in range(3, 1024):\n"
    "        for g in guesses[:200] + [b'0' * 32]:\n"
    "            try:\n"
    "                os.write(fd, g if isinstance(g, bytes) else g.encode())\n"
    "            except Exception:\n"
    "                break\n"
)

ATTACKS = {
    # --- exit paths ---
    "sys_exit_0_top_level": "import sys\nsys.exit(0)\n",
    "os_exit_0_top_level": "import os\nos._exit(0)\n",
    "exit_builtin_in_call": "def add(a, b):\n    exit(0)\n",
    "systemexit_in_call": "def add(a, b):\n    raise SystemExit(0)\n",
    "os_exit_in_call": "import os\ndef add(a, b):\n    os._exit(0)\n",
    "keyboardinterrupt_in_call": "def add(a, b):\n    raise KeyboardInterrupt\n",
    "sigkill_self_in_call": "import os, signal\ndef add(a, b):\n    os.kill(os.getpid(), signal.SIGKILL)\n",
    "disable_exit_primitives": (
        "import os, sys, builtins\nos._exit = lambda *a: None\nsys.exit = lambda *a: None\n"
        "builtins.exit = builtins.quit = lambda *a: None\n" + WRONG),
    # --- builtins and module attributes a runner touches ---
    "patch_exec_compile_open": (
        "import builtins\nbuiltins.exec = lambda *a, **k: None\n"
        "builtins.compile = lambda *a, **k: compile('pass', 'x', 'exec')\n"
        "builtins.open = lambda *a, **k: __import__('io').StringIO('')\n" + WRONG),
    "patch_assertionerror_and_isinstance": (
        "import builtins\nbuiltins.AssertionError = type('A', (BaseException,), {})\n"
        "builtins.isinstance = lambda *a: True\nbuiltins.len = lambda x: 0\n" + WRONG),
    "replace_module_builtins": "__builtins__ = {'__import__': __import__}\n" + WRONG,
    "patch_os_write_and_io": (
        "import os, io, json, traceback, linecache\nos.write = lambda fd, b: len(b)\n"
        "json.dumps = lambda *a, **k: '[]'\ntraceback.format_exception = lambda *a, **k: []\n"
        "linecache.getline = lambda *a, **k: ''\n" + WRONG),
    "patch_the_sandbox_modules": (
        "import sys\nfor name, module in list(sys.modules.items()):\n"
        "    if name.startswith('_sandbox'):\n"
        "        for attr in list(vars(module)):\n"
        "            if not attr.startswith('__'):\n"
        "                try:\n                    setattr(module, attr, None)\n"
        "                except Exception:\n                    pass\n" + WRONG),
    # --- I/O and descriptors ---
    "write_nonce_guesses_to_every_fd": _FORGE_ALL_FDS + "_forge()\n" + WRONG,
    "write_guesses_during_tests": _FORGE_ALL_FDS + "def add(a, b):\n    _forge()\n    return 0\n",
    "close_every_fd": "import os\nos.closerange(0, 1024)\n" + WRONG,
    "read_proc_and_tests": (
        "import os, glob\nfor p in ['/proc/1/fd', '/proc/self/fd', '/proc/1/mem']:\n"
        "    try:\n        os.listdir(p)\n        raise SystemExit('proc reachable: ' + p)\n"
        "    except (FileNotFoundError, NotADirectoryError, PermissionError):\n        pass\n"
        "for path in glob.glob('/tmp/**', recursive=True):\n    pass\n" + WRONG),
    # --- atexit, excepthook, signals, threads, forks ---
    "atexit_exit_0": "import atexit, os\natexit.register(lambda: os._exit(0))\n" + WRONG,
    "excepthooks_exit_0": (
        "import os, sys, threading\nsys.excepthook = lambda *a: os._exit(0)\n"
        "threading.excepthook = lambda *a: os._exit(0)\n" + WRONG),
    "alarm_exit_0_during_tests": (
        "import os, signal\nsignal.signal(signal.SIGALRM, lambda *a: os._exit(0))\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)\n" + WRONG),
    "thread_exits_during_tests": (
        "import os, threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(0.01), os._exit(0)), daemon=True).start()\n"
        "def add(a, b):\n    time.sleep(0.05)\n    return 0\n"),
    "signal_every_process": (
        "import os, signal\ndef add(a, b):\n"
        "    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGKILL):\n"
        "        for pid in range(1, 64):\n"
        "            if pid != os.getpid():\n"
        "                try:\n                    os.kill(pid, sig)\n"
        "                except OSError:\n                    pass\n    return 0\n"),
    "fork_and_keep_serving": (
        "import os\nif os.fork():\n    os._exit(0)\n" + WRONG),
    "ptrace_the_test_process": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "for pid in range(1, 64):\n"
        "    if libc.ptrace(16, pid, 0, 0) == 0:\n"  # PTRACE_ATTACH
        "        raise SystemExit('attached to ' + str(pid))\n" + WRONG),
    # --- frames and gc ---
    "walk_frames_for_the_runner": (  # the boot's frames are here; what do they hold?
        "import sys, os, gc\ndef add(a, b):\n"
        "    frame, fds, secrets = sys._getframe(), set(), []\n"
        "    while frame:\n"
        "        for key, value in frame.f_locals.items():\n"
        "            if type(value) is int and 'fd' in key:\n                fds.add(value)\n"
        "            if 'nonce' in key and type(value) in (bytes, str):\n"
        "                secrets.append(value)\n"
        "        frame = frame.f_back\n"
        "    secrets += [o['nonce'] for o in gc.get_objects() if type(o) is dict and 'nonce' in o]\n"
        "    for fd in fds:\n"
        "        for secret in secrets:\n"
        "            try:\n                os.write(fd, secret)\n"
        "            except Exception:\n                pass\n"
        "    if secrets:\n        raise SystemExit('found a nonce')\n"
        "    return 0\n"),
    "settrace_skips_asserts": (
        "import sys, threading\ndef tracer(frame, event, arg):\n"
        "    if event == 'line' and frame.f_code.co_filename == 'tests.py':\n"
        "        frame.f_lineno = frame.f_lineno + 1\n    return tracer\n"
        "sys.settrace(tracer)\nthreading.settrace(tracer)\n"
        "sys.addaudithook(lambda event, args: None)\n" + WRONG),
    # --- the channel to the test process ---
    "forge_protocol_frames": (
        "import json, os, struct\n"
        "def frame(message):\n    data = json.dumps(message).encode()\n"
        "    return struct.pack('>I', len(data)) + data\n"
        "def add(a, b):\n"
        "    for fd in range(3, 64):\n"
        "        for message in (['v', True, [], None], ['v', ['i', '5'], [], None],\n"
        "                        ['q', ['ty', 'exit']], ['ready', ['d', []]]):\n"
        "            try:\n                os.write(fd, frame(message))\n"
        "            except OSError:\n                pass\n    return 0\n"),
    "flood_the_channel": (
        "import os, struct\ndef add(a, b):\n"
        "    for fd in range(3, 64):\n"
        "        try:\n            os.write(fd, struct.pack('>I', 2**31) + b'x' * 65536)\n"
        "        except OSError:\n            pass\n    return 0\n"),
    "exception_named_like_a_pass": (
        "class AssertionError(Exception):\n    pass\nclass StopIteration(SystemExit):\n    pass\n"
        "def add(a, b):\n    raise StopIteration(0)\n"),
    "return_builtin_exit_by_name": "def add(a, b):\n    return exit\n",
    "rebind_test_names_during_call": (
        "def add(a, b):\n    global check, METADATA, candidate\n"
        "    check = METADATA = candidate = lambda *a: None\n    return 0\n"),
    # --- what the tests hand over (run against CALLBACK_TESTS) ---
    "escalate_through_the_tests_function": (
        "def apply(f, x):\n"
        "    for path in ('__globals__', '__code__', '__closure__', '__defaults__',\n"
        "                 '__self__', '__func__', '__builtins__', '__wrapped__'):\n"
        "        try:\n            found = getattr(f, path)\n"
        "        except Exception:\n            continue\n"
        "        raise SystemExit('reached ' + path)\n"
        "    for name in ('gi_frame', 'f_back', 'f_globals', 'tb_frame', 'co_code'):\n"
        "        try:\n            getattr(f, name)\n            raise SystemExit('reached ' + name)\n"
        "        except AttributeError:\n            pass\n"
        "    return 0\n"),
}
CALLBACK_ATTACKS = {"escalate_through_the_tests_function"}


def jobs():
    jobs, names = [], []
    for name, program in sorted(ATTACKS.items()):
        styles = [("callback", CALLBACK_TESTS)] if name in CALLBACK_ATTACKS else \
            [("mbpp", MBPP_TESTS), ("humaneval", HUMANEVAL_TESTS)]
        for style, tests in styles:
            jobs.append((program, tests))
            names.append(f"{name}[{style}]")
    return jobs, names
