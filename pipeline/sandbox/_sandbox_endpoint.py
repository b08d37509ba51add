"""One side of the sandbox protocol (`Endpoint`): encodes and decodes values, sends requests and serves the other
side's. Both the test process and the program process subclass it (`_sandbox_tester`, `_sandbox_runner`). Part of
`_sandbox_protocol` (see its doc for what crosses by copy and what as a reference)."""
import base64
import collections
import datetime
import decimal
import fractions

from _sandbox_channel import PeerEnded, ProtocolError, RemoteError
from _sandbox_remote import RemoteObject
from _sandbox_values import (_BUILTIN_EXCEPTIONS, _BUILTIN_NAMES, _BUILTIN_VALUES, _DEFAULT_FACTORIES, _FACTORY_NAMES,
                             _MUTABLE, _SEQUENCE_TAGS, MAX_DEPTH, _int, _nearest_builtin_exception, _write_back)


class Endpoint:
    """One side of the channel: encodes, decodes, sends requests and serves the other's.

    Subclasses define `serve_request(kind, request)` (what this side agrees to do),
    `may_reference(value)` (what may leave as a reference) and, optionally, `reply_extra`
    / `apply_extra` (data piggybacked on replies).
    """

    def __init__(self, channel):
        self.channel = channel
        self.objects = {}  # our handle -> our object the other side holds a reference to
        self.handles = {}  # id(our object) -> our handle
        self.proxies = {}  # their handle -> RemoteObject (one proxy per remote object)
        self.standins = {}  # their handle -> local stand-in exception class
        self.standin_handles = {}  # id(stand-in class) -> their handle

    # --- what a side allows (overridden) ---
    def serve_request(self, kind, request):
        raise ProtocolError("this side serves no requests")

    def may_reference(self, value):
        return True

    def reply_extra(self):
        return None

    def apply_extra(self, extra):
        pass

    # --- encoding ---
    def _reference(self, value):
        if type(value) is RemoteObject:
            return ["o", object.__getattribute__(value, "_sandbox_handle")]
        standin = self.standin_handles.get(id(value))
        if standin is not None and self.standins.get(standin) is value:
            return ["o", standin]
        if not self.may_reference(value):
            raise TypeError(f"the sandbox does not pass a {type(value).__name__} across")
        key = id(value)
        handle = self.handles.get(key)
        if handle is None or self.objects.get(handle) is not value:
            handle = len(self.objects) + 1
            self.objects[handle] = value
            self.handles[key] = handle
        if isinstance(value, type) and issubclass(value, BaseException):
            return ["xc", handle, str(getattr(value, "__name__", "Error"))[:200],
                    _nearest_builtin_exception(value)]
        return ["h", handle]

    def encode(self, value, record=None, aliases=None, _depth=0, _active=None, _top=False):
        """`value` as JSON-able data.

        record: a list that collects the mutable containers encoded, in pre-order.
        aliases: {id(container): index}: those containers encode as ["a", index] (not at
        the top when _top is set: that is the state of the container itself).
        """
        kind = type(value)
        if value is None or kind is bool or kind is str or kind is float:
            return value
        if kind is int:
            return _int(value)
        if aliases is not None and not _top:
            index = aliases.get(id(value))
            if index is not None:
                return ["a", index]
        if kind is complex:
            return ["c", value.real, value.imag]
        if kind is bytes:
            return ["b", base64.b64encode(value).decode("ascii")]
        if value is Ellipsis:
            return ["e"]
        if kind is fractions.Fraction:
            return ["fr", _int(value.numerator), _int(value.denominator)]
        if kind is decimal.Decimal:
            return ["dec", str(value)]
        if kind is datetime.timedelta:
            return ["td", value.days, value.seconds, value.microseconds]
        if kind is datetime.date:
            return ["date", value.isoformat()]
        if kind is datetime.datetime and value.tzinfo is None:
            return ["dt", value.isoformat()]
        name = _BUILTIN_NAMES.get(id(value))
        if name is not None and _BUILTIN_VALUES.get(name) is value:
            return ["ty", name]
        container = kind in _SEQUENCE_TAGS or kind is dict or kind is slice \
            or kind is bytearray or kind in _MUTABLE
        if not container:
            return self._reference(value)
        if kind is collections.defaultdict and value.default_factory is not None \
                and _FACTORY_NAMES.get(id(value.default_factory)) is None:
            return self._reference(value)
        if _active is None:
            _active = set()
        if _depth >= MAX_DEPTH or id(value) in _active:  # too deep, or a cycle
            return self._reference(value)
        if record is not None and kind in _MUTABLE:
            record.append(value)
        if kind is bytearray:
            return ["ba", base64.b64encode(value).decode("ascii")]
        _active.add(id(value))
        try:
            def down(item):
                return self.encode(item, record, aliases, _depth + 1, _active)
            if kind is slice:
                return ["sl", [down(part) for part in (value.start, value.stop, value.step)]]
            if kind in _SEQUENCE_TAGS:
                return [_SEQUENCE_TAGS[kind], [down(item) for item in list(value)]]
            if kind is collections.deque:
                return ["dq", [down(item) for item in list(value)], value.maxlen]
            pairs = [[down(k), down(v)] for k, v in list(value.items())]
            if kind is dict:
                return ["d", pairs]
            if kind is collections.OrderedDict:
                return ["od", pairs]
            if kind is collections.Counter:
                return ["ctr", pairs]
            factory = value.default_factory
            return ["dd", None if factory is None else _FACTORY_NAMES[id(factory)], pairs]
        finally:
            _active.discard(id(value))

    def encode_exception(self, error):
        try:
            cls = self.encode(type(error))
        except Exception:  # noqa: BLE001 - e.g. a class this side will not reference
            cls = ["ty", "Exception"]
        try:
            args = self.encode(tuple(error.args))
        except Exception:  # noqa: BLE001
            args = None
        try:
            message = str(error)[:4000]
        except BaseException:  # noqa: BLE001 - the exception may refuse to print
            message = "<unprintable>"
        return [cls, args, message if type(message) is str else "<unprintable>"]

    # --- decoding ---
    def _proxy(self, handle):
        proxy = self.proxies.get(handle)
        if proxy is None:
            proxy = self.proxies[handle] = RemoteObject(handle)
        return proxy

    def _standin(self, handle, name, base):
        cls = self.standins.get(handle)
        if cls is None:
            parent = _BUILTIN_EXCEPTIONS.get(base, Exception)
            cls = type(name, (parent,), {"__module__": "sandbox_peer"})
            self.standins[handle] = cls
            self.standin_handles[id(cls)] = handle
        return cls

    def decode(self, data, record=None, aliases=None):
        kind = type(data)
        if data is None or kind is bool or kind is str or kind is float:
            return data
        if kind is not list or not data or type(data[0]) is not str:
            raise ProtocolError("malformed value")
        tag, body = data[0], data[1:]
        try:
            if tag == "i" and len(body) == 1 and type(body[0]) is str:
                return int(body[0], 16)
            if tag == "h" and len(body) == 1 and type(body[0]) is int:
                return self._proxy(body[0])
            if tag == "o" and len(body) == 1 and type(body[0]) is int:
                if body[0] in self.objects:
                    return self.objects[body[0]]
                if body[0] in self.standins:
                    return self.standins[body[0]]
                raise ProtocolError(f"unknown reference {body[0]}")
            if tag == "a" and len(body) == 1 and type(body[0]) is int:
                if aliases is None or not 0 <= body[0] < len(aliases):
                    raise ProtocolError("unknown alias")
                return aliases[body[0]]
            if tag == "ty" and len(body) == 1 and body[0] in _BUILTIN_VALUES:
                return _BUILTIN_VALUES[body[0]]
            if tag == "xc" and len(body) == 3 and type(body[0]) is int \
                    and type(body[1]) is str and type(body[2]) is str:
                return self._standin(body[0], body[1][:200] or "Error", body[2])
            if tag == "c" and len(body) == 2 and all(type(b) in (float, int) for b in body):
                return complex(body[0], body[1])
            if tag in ("b", "ba") and len(body) == 1 and type(body[0]) is str:
                raw = base64.b64decode(body[0].encode("ascii"), validate=True)
                if tag == "b":
                    return raw
                value = bytearray(raw)
                if record is not None:
                    record.append(value)
                return value
            if tag == "e" and not body:
                return Ellipsis
            if tag == "fr" and len(body) == 2:
                return fractions.Fraction(self._int(body[0]), self._int(body[1]))
            if tag == "dec" and len(body) == 1 and type(body[0]) is str and len(body[0]) < 5000:
                return decimal.Decimal(body[0])
            if tag == "td" and len(body) == 3 and all(type(b) is int for b in body):
                return datetime.timedelta(days=body[0], seconds=body[1],
                                          microseconds=body[2])
            if tag == "date" and len(body) == 1 and type(body[0]) is str:
                return datetime.date.fromisoformat(body[0])
            if tag == "dt" and len(body) == 1 and type(body[0]) is str:
                return datetime.datetime.fromisoformat(body[0])
            return self._decode_container(tag, body, record, aliases)
        except ProtocolError:
            raise
        except (TypeError, ValueError, RecursionError, MemoryError, ArithmeticError,
                OverflowError, decimal.InvalidOperation) as error:  # unhashable key...
            raise ProtocolError(f"malformed value tagged {tag[:10]!r}: "
                                f"{type(error).__name__}") from None

    def _int(self, data):
        if type(data) is not list or len(data) != 2 or data[0] != "i" or type(data[1]) is not str:
            raise ProtocolError("malformed integer")
        return int(data[1], 16)

    def _decode_container(self, tag, body, record, aliases):
        def down(item):
            return self.decode(item, record, aliases)
        if tag == "dq" and len(body) == 2 and type(body[0]) is list \
                and (body[1] is None or type(body[1]) is int):
            value = collections.deque(maxlen=body[1])
            if record is not None:
                record.append(value)
            value.extend(down(item) for item in body[0])
            return value
        if tag == "dd" and len(body) == 2 and (body[0] is None or body[0] in _DEFAULT_FACTORIES):
            value = collections.defaultdict(_DEFAULT_FACTORIES.get(body[0]))
            pairs = body[1]
        elif len(body) != 1 or type(body[0]) is not list:
            raise ProtocolError(f"malformed value tagged {tag[:10]!r}")
        else:
            value = {"l": list, "s": set, "d": dict, "od": collections.OrderedDict,
                     "ctr": collections.Counter}.get(tag, None)
            value = value() if value is not None else None
            pairs = body[0]
        if value is None:  # immutable: tuple, frozenset, slice
            items = [down(item) for item in body[0]]
            if tag == "t":
                return tuple(items)
            if tag == "fs":
                return frozenset(items)
            if tag == "sl" and len(items) == 3:
                return slice(*items)
            raise ProtocolError(f"unknown value tag {tag[:10]!r}")
        if record is not None:
            record.append(value)
        if type(value) is list:
            value.extend(down(item) for item in pairs)
        elif type(value) is set:
            for item in pairs:
                value.add(down(item))
        else:
            for pair in pairs:
                if type(pair) is not list or len(pair) != 2:
                    raise ProtocolError("malformed dict item")
                key = down(pair[0])
                dict.__setitem__(value, key, down(pair[1]))
        return value

    def decode_exception(self, data):
        if type(data) is not list or len(data) != 3 or type(data[2]) is not str:
            raise ProtocolError("malformed exception")
        cls = self.decode(data[0])
        message = data[2]
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            return RemoteError(message)
        try:
            args = self.decode(data[1]) if data[1] is not None else (message,)
            if type(args) is not tuple:
                args = (message,)
            return cls(*args)
        except ProtocolError:
            raise
        except Exception:  # noqa: BLE001 - e.g. UnicodeDecodeError wants five arguments
            try:
                return cls(message)
            except Exception:  # noqa: BLE001
                return RemoteError(f"{getattr(cls, '__name__', 'Error')}: {message}")

    # --- requests ---
    def request(self, *message):
        """Send a request; serve the other side's requests until its reply comes."""
        sent = []
        try:
            self.channel.send(["q", self.encode(list(message), record=sent)])
            while True:
                frame = self.channel.receive()
                if type(frame) is not list or not frame:
                    raise ProtocolError("malformed frame")
                if frame[0] == "q" and len(frame) == 2:
                    self._serve(frame[1])
                    continue
                if frame[0] in ("v", "x") and len(frame) == 4 and type(frame[2]) is list:
                    return self._reply(frame, sent)
                raise ProtocolError("malformed frame")
        except (EOFError, OSError) as error:
            raise PeerEnded(f"the other process ended ({error})") from None
        except ProtocolError as error:
            raise PeerEnded(f"the other process broke the protocol ({error})") from None

    def _reply(self, frame, sent):
        syncs = frame[2]
        if len(syncs) > len(sent):
            raise ProtocolError("more write-backs than containers sent")
        for original, state in zip(sent, syncs):
            if state is None:
                continue
            new = self.decode(state, aliases=sent)
            if type(new) is not type(original):
                raise ProtocolError("a write-back changed a container's type")
            _write_back(original, new)
        self.apply_extra(frame[3])
        if frame[0] == "v":
            return self.decode(frame[1], aliases=sent)
        raise self.decode_exception(frame[1])

    def _serve(self, data):
        received = []
        try:
            try:
                message = self.decode(data, record=received)
            except ProtocolError:
                raise
            if type(message) is not list or not message or type(message[0]) is not str:
                raise ProtocolError("malformed request")
            result = self.serve_request(message[0], message)
            positions = {id(c): i for i, c in enumerate(received)}
            reply = ["v", self.encode(result, aliases=positions)]
        except ProtocolError:
            raise
        except PeerEnded:
            raise
        except BaseException as error:  # noqa: BLE001 - relayed as raised
            positions = {id(c): i for i, c in enumerate(received)}
            reply = ["x", self.encode_exception(error)]
        syncs = []
        for container in received:
            try:
                syncs.append(self.encode(container, aliases=positions, _top=True))
            except Exception:  # noqa: BLE001 - e.g. holds something this side keeps
                syncs.append(None)
        try:
            extra = self.reply_extra()
        except Exception:  # noqa: BLE001
            extra = None
        self.channel.send(reply + [syncs, extra])
