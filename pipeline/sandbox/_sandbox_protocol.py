"""Wire format and request loop shared by the sandbox's test process and program process.

Loaded by the sandbox's boot process (`_sandbox_boot.py`) and inherited, by fork, by both
sides; it and its parts import nothing from the project. The parts, siblings imported by
plain name while the boot process has this folder on sys.path: `_sandbox_channel` (the
frames, the errors), `_sandbox_values` (what crosses by copy or by name),
`_sandbox_endpoint` (`Endpoint`: encoding, decoding, the request loop), `_sandbox_remote`
(`RemoteObject`, `bind`, `OPERATIONS`). The test and program processes use them through
this module's names.

Frames are a 4-byte big-endian length and a JSON document. Values cross by copy when their
type is exactly one of: None, bool, int, float, complex, str, bytes, bytearray, list,
tuple, set, frozenset, dict, slice, Ellipsis, and (the values benchmark tests build) the
standard library's Fraction, Decimal, OrderedDict, Counter, defaultdict (of a builtin
factory), deque, date, datetime and timedelta (naive), containers recursively; builtin
types and builtin functions cross by name. Anything else (a function, a class, a module,
an instance of any other class, a subclass of a builtin) stays in the process that owns it
and crosses as a reference, ["h", id]; the other side wraps it in a `RemoteObject` proxy
whose every operation is a request back to the owner. An exception class that is not a
builtin crosses as a local stand-in subclass of its nearest builtin exception class, so
that `except ThatError:` works on both sides.

Calls keep Python's sharing semantics where a copy would lose them: the mutable containers
a request sends (lists, dicts, sets, ...) are recorded on both sides; the reply carries
their final state, which the requester writes back into its own objects in place (so a
function that sorts its argument in place is seen to), and a reply that returns one of
them returns the requester's own object (so `f(x) is x` holds).

Decoding builds builtin and allow-listed standard-library values only (no pickle, no eval,
no constructor chosen by the sender), so a side never runs code the other side chose. Each
side decides which requests it serves (`Endpoint.serve_request`): the program's side
serves every request of the tests; the test side serves a narrow set (see
`_sandbox_tester`).
"""
from _sandbox_channel import MAX_FRAME_BYTES, Channel, PeerEnded, ProtocolError, RemoteError  # noqa: F401
from _sandbox_endpoint import Endpoint  # noqa: F401
from _sandbox_remote import OPERATIONS, RemoteObject, bind  # noqa: F401
from _sandbox_values import INTROSPECTION_BUILTINS, MAX_DEPTH  # noqa: F401
