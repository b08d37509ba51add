"""The program's process: runs the generated program, then answers the test process.

Forked by the sandbox's boot process (`_sandbox_boot.py`), which has already isolated it
(namespaces, its own uid when run as root, no capabilities, rlimits) and closed every file
descriptor but stdin (/dev/null), stdout/stderr (the captured output) and its end of the
channel to the test process. It holds nothing that decides the verdict: not the tests,
not the proof of completion, not the channel the proof is written to. Everything here is
therefore untrusted once the program's first line runs, and nothing here needs to be
trusted: the test process only ever receives data and references from it.

Protocol (see `_sandbox_protocol`): first a hello, ["ready", the program's global names as a
dict value] or ["failed", text]; then the request loop. Every reply to the test process
also carries the program's global names rebound since the last reply, so that a test
reading a global the program reassigned (a counter, say) sees the new value.
"""
import builtins
import io
import linecache
import os
import sys
import traceback
import types

import _sandbox_protocol as protocol

_MAX_MESSAGE_CHARS = 4000


def _is_dunder(name):
    return name.startswith("__") and name.endswith("__")


class ProgramSide(protocol.Endpoint):
    def __init__(self, channel, namespace):
        super().__init__(channel)
        self.namespace = namespace
        self.seen = {}  # global name -> value last sent to the test process

    def visible_globals(self):
        return {name: value for name, value in list(self.namespace.items())
                if type(name) is str and not _is_dunder(name)}

    def reply_extra(self):
        current = self.visible_globals()
        changed = {}
        for name, value in current.items():
            if name not in self.seen or self.seen[name] is not value:
                try:
                    changed[name] = self.encode(value)
                except Exception:  # noqa: BLE001
                    continue
                self.seen[name] = value
        removed = [name for name in self.seen if name not in current]
        for name in removed:
            del self.seen[name]
        return [changed, removed] if changed or removed else None

    def serve_request(self, kind, request):
        if kind == "call" and len(request) == 4:
            _, target, args, kwargs = request
            return target(*args, **{key: value for key, value in kwargs})
        if kind == "getattr" and len(request) == 3:
            return getattr(request[1], request[2])
        if kind == "setattr" and len(request) == 4:
            return setattr(request[1], request[2], request[3])
        if kind == "delattr" and len(request) == 3:
            return delattr(request[1], request[2])
        if kind == "op" and len(request) == 3:
            return protocol.OPERATIONS[request[1]](*request[2])
        raise protocol.ProtocolError(f"unknown request {kind[:20]!r}")

    def serve_forever(self):
        while True:
            try:
                frame = self.channel.receive()
            except EOFError:
                return
            if type(frame) is not list or len(frame) != 2 or frame[0] != "q":
                return  # only the test process talks here; it never sends this
            self._serve(frame[1])


def main(channel_fd, program):
    """Run `program` as `__main__`, then serve the test process until it hangs up."""
    channel = protocol.Channel(channel_fd)
    # Output goes straight to the captured file: the process is killed, not ended, when
    # the tests finish, so nothing may wait in a buffer.
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", write_through=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", write_through=True)
    sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr
    sys.argv = ["program.py"]
    module = types.ModuleType("__main__")
    module.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = module
    linecache.cache["program.py"] = (len(program), None, program.splitlines(True),
                                     "program.py")
    side = ProgramSide(channel, module.__dict__)
    protocol.bind(side)
    try:
        exec(compile(program, "program.py", "exec"), module.__dict__)  # noqa: S102
    except BaseException as error:  # noqa: BLE001 - SystemExit included: no tests ran
        try:
            text = "".join(traceback.format_exception(error))
        except BaseException:  # noqa: BLE001
            text = "the program raised an exception\n"
        if isinstance(error, SystemExit):
            text += "sandbox: the program raised SystemExit before the tests ran\n"
        channel.send(["failed", text[-_MAX_MESSAGE_CHARS:]])
        os._exit(1)
    try:
        names = side.visible_globals()
        hello = ["ready", side.encode(names)]
        side.seen = names
    except BaseException as error:  # noqa: BLE001 - e.g. a global the encoder chokes on
        hello = ["failed", f"sandbox: the program's globals could not be sent: "
                           f"{type(error).__name__}"]
    channel.send(hello)
    try:
        side.serve_forever()
    except BaseException:  # noqa: BLE001 - the test process decides; it saw the error
        pass
    os._exit(0)
