"""The test process: runs the tests against the program's process, and alone decides.

Forked by the sandbox's boot process (`_sandbox_boot.py`) before the program's process,
isolated from it (its own uid when run as root; not dumpable, so not traceable and its
memory and descriptors unreadable by a process without privileges; no capabilities). It
alone holds the test source, the nonce and the channel the nonce is written to; the
program's process never has any of them, in memory or as a descriptor.

The tests run here, in this interpreter, with its own builtins. The program's global names
(its functions, classes, modules, values) are visible to them, as in a plain run of
program + tests, but as copies (plain data) or proxies (anything else): calling a proxy, or
any operation on one, is a request the program's process answers with data or references.
While it waits for an answer, this process serves the program's requests on what the tests
handed it (their lambdas, key functions, objects), narrowly (`TestSide`).
No code of the program ever runs in this process, so nothing the program does can change
how the tests run here or what happens after them. The nonce is written if and only if
`exec` of the tests returns normally; then the process ends with os._exit, bound like
every primitive used after the tests before any test ran.
"""
import builtins
import gc
import inspect
import io
import linecache
import os
import signal
import sys
import traceback
import types

import _sandbox_protocol as protocol

_MAX_NONCE_BYTES = 256
_MAX_TESTS_BYTES = 64 << 20
ProgramEnded = protocol.PeerEnded

# What the tests' objects may never hand to the program as references: anything that
# reaches into this interpreter (its frames, code, modules, and the primitives that read
# or change names), whatever path the program asked for it by.
_NEVER_SHARED_TYPES = (types.ModuleType, types.FrameType, types.TracebackType,
                       types.CodeType, types.CellType)
_NEVER_SHARED = {id(value): value for value in (
    *(getattr(builtins, name) for name in protocol.INTROSPECTION_BUILTINS),
    sys._getframe, sys.exc_info, sys.settrace, sys.setprofile, sys.exit, os._exit,
    os.write, gc.get_objects, gc.get_referrers, gc.get_referents, inspect.currentframe,
    inspect.stack, signal.signal, object.__getattribute__, type.__getattribute__,
    object.__setattr__, type.__setattr__)}


class TestSide(protocol.Endpoint):
    """Serves the program only what the tests themselves handed it, narrowly.

    The program may call a callable the tests passed it (a key function, a lambda, a test
    object's method), apply Python's operators to it, and get or set its attributes whose
    names do not start with an underscore. What comes back is data, or a reference to one
    of the tests' objects that is not a module, frame, code, traceback, cell, generator or
    an introspection primitive (`_NEVER_SHARED`). No code of the program runs here.
    """

    def __init__(self, channel, namespace):
        super().__init__(channel)
        self.namespace = namespace
        self.from_program = {}  # global name -> the value the program last gave it

    def may_reference(self, value):
        return not isinstance(value, _NEVER_SHARED_TYPES) and \
            _NEVER_SHARED.get(id(value)) is not value

    def apply_extra(self, extra):
        if extra is None:
            return
        if type(extra) is not list or len(extra) != 2 or type(extra[0]) is not dict \
                or type(extra[1]) is not list:
            raise protocol.ProtocolError("malformed global names")
        for name, value in extra[0].items():
            if self._still_the_programs(name):
                self.namespace[name] = self.from_program[name] = self.decode(value)
        for name in extra[1]:
            if type(name) is str and name in self.from_program \
                    and self._still_the_programs(name):
                self.namespace.pop(name, None)
                del self.from_program[name]

    def _still_the_programs(self, name):
        """A name the tests did not bind themselves (the program may rebind only those)."""
        if name not in self.namespace:
            return True
        return name in self.from_program and \
            self.namespace[name] is self.from_program[name]

    def take_globals(self, names):
        self.from_program = dict(names)
        self.namespace.update(names)

    def serve_request(self, kind, request):
        if kind == "op" and len(request) == 3 and type(request[2]) is list \
                and request[1] in protocol.OPERATIONS and request[1] != "dir":
            return protocol.OPERATIONS[request[1]](*request[2])  # operands' own methods
        target = request[1] if len(request) > 1 else None
        if type(target) is protocol.RemoteObject or not self._ours(target):
            raise TypeError("the tests serve only their own objects")
        if kind == "call" and len(request) == 4 and type(request[2]) is list \
                and type(request[3]) is list:
            if not callable(target) or not self.may_reference(target):
                raise TypeError("not callable")
            kwargs = {}
            for pair in request[3]:
                if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
                    raise TypeError("malformed keyword arguments")
                kwargs[pair[0]] = pair[1]
            return target(*request[2], **kwargs)
        if kind in ("getattr", "setattr", "delattr") and len(request) >= 3:
            name = request[2]
            if type(name) is not str or name.startswith("_"):
                raise AttributeError(f"the tests do not share attribute {str(name)[:100]!r}")
            if kind == "getattr" and len(request) == 3:
                return getattr(target, name)
            if kind == "setattr" and len(request) == 4:
                return setattr(target, name, request[3])
            if kind == "delattr" and len(request) == 3:
                return delattr(target, name)
        raise TypeError(f"the tests do not serve {kind[:20]!r}")

    def _ours(self, value):
        handle = self.handles.get(id(value))
        return handle is not None and self.objects.get(handle) is value


def _read_all(fd, limit):
    chunks, size = [], 0
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise ValueError(f"more than {limit} bytes")
        chunks.append(chunk)


def main(channel_fd, status_fd, tests_fd, nonce_fd):
    """Run the tests; write the nonce to status_fd only if they ran to the end."""
    write, exit_now = os.write, os._exit
    nonce = _read_all(nonce_fd, _MAX_NONCE_BYTES)
    os.close(nonce_fd)
    tests = _read_all(tests_fd, _MAX_TESTS_BYTES).decode("utf-8")
    os.close(tests_fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # nobody may interrupt the tests into a pass
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", write_through=True)
    sys.argv = ["tests.py"]
    linecache.cache["tests.py"] = (len(tests), None, tests.splitlines(True), "tests.py")
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    side = TestSide(protocol.Channel(channel_fd), namespace)
    protocol.bind(side)

    def fail(text):
        try:
            sys.stderr.write(text if text.endswith("\n") else text + "\n")
        except BaseException:  # noqa: BLE001
            pass
        exit_now(1)

    try:
        code = compile(tests, "tests.py", "exec")
    except SyntaxError:
        fail("sandbox: the tests do not compile\n" + traceback.format_exc())
    try:
        hello = side.channel.receive()
    except (EOFError, OSError, protocol.ProtocolError) as error:
        fail(f"sandbox: the program's process ended before the tests ran ({error})")
    if type(hello) is list and len(hello) == 2 and hello[0] == "failed" \
            and type(hello[1]) is str:
        fail(hello[1] + "\nsandbox: the program failed before the tests ran")
    if type(hello) is not list or len(hello) != 2 or hello[0] != "ready":
        fail("sandbox: the program's process broke the protocol before the tests ran")
    try:
        try:
            program_globals = side.decode(hello[1])
        except protocol.ProtocolError as error:
            raise ProgramEnded(f"the program's process broke the protocol ({error})") from None
        if type(program_globals) is not dict or \
                not all(type(name) is str for name in program_globals):
            raise ProgramEnded("the program's process broke the protocol (globals)")
        side.take_globals(program_globals)
        exec(code, namespace)  # noqa: S102 - the benchmark's own tests
    except BaseException as error:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included
        try:
            trace = error.__traceback__
            if trace is not None and trace.tb_next is not None:
                trace = trace.tb_next  # start at the tests, not at this function
            text = "".join(traceback.format_exception(type(error), error, trace))
        except BaseException:  # noqa: BLE001 - formatting may ask the program for text
            text = f"sandbox: the tests failed with {type(error).__name__}"
        fail(text)
    write(status_fd, nonce)
    exit_now(0)
