"""The sandbox protocol's framing: a 4-byte big-endian length and a JSON document per frame, over a connected
socket's file descriptor (`Channel`), and the protocol's errors. Part of `_sandbox_protocol` (see its doc)."""
import json
import os
import struct

MAX_FRAME_BYTES = 64 << 20  # a larger message is a protocol error (the process fails)
_HEADER = struct.Struct(">I")


class ProtocolError(Exception):
    """A malformed or oversized message."""


class RemoteError(Exception):
    """An exception raised on the other side that could not be rebuilt here."""


class PeerEnded(Exception):
    """The other process ended, or broke the protocol, while this one waited on it."""


class Channel:
    """Length-prefixed JSON frames over a connected socket's file descriptor.

    Every primitive is bound when the channel is made, so that later changes to the `os`
    or `json` modules (on the program's own side) do not change how it talks.
    """

    def __init__(self, fd):
        self.fd = fd
        self._read = os.read
        self._write = os.write
        self._dumps = json.JSONEncoder(ensure_ascii=True, allow_nan=True,
                                       separators=(",", ":"), check_circular=False).encode
        self._loads = json.JSONDecoder().decode
        self._pack = _HEADER.pack
        self._unpack = _HEADER.unpack

    def send(self, message):
        data = self._dumps(message).encode("ascii")
        if len(data) > MAX_FRAME_BYTES:
            raise ProtocolError(f"message of {len(data)} bytes exceeds {MAX_FRAME_BYTES}")
        view = memoryview(self._pack(len(data)) + data)
        while view:
            view = view[self._write(self.fd, view):]

    def _read_exact(self, size):
        chunks = []
        while size:
            chunk = self._read(self.fd, min(size, 1 << 20))
            if not chunk:
                raise EOFError("the other process closed the channel")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def receive(self):
        (size,) = self._unpack(self._read_exact(4))
        if size > MAX_FRAME_BYTES:
            raise ProtocolError(f"message of {size} bytes exceeds {MAX_FRAME_BYTES}")
        data = self._read_exact(size)
        try:
            return self._loads(data.decode("ascii"))
        except (ValueError, RecursionError, UnicodeDecodeError) as error:
            raise ProtocolError(f"malformed message: {type(error).__name__}") from None
