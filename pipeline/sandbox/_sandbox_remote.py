"""The sandbox protocol's proxies and operations: `RemoteObject`, an object that lives in the other process and whose
every operation is a request to it (through the Endpoint `bind` sets), and `OPERATIONS`, the table of Python
operations a side applies when the other asks ("op" requests). Part of `_sandbox_protocol` (see its doc)."""

_endpoint = None  # this process's Endpoint, set once by the side that runs


def bind(endpoint):
    global _endpoint
    _endpoint = endpoint


def _request(*message):
    return _endpoint.request(*message)


def _op(name, *operands):
    return _endpoint.request("op", name, list(operands))


class RemoteObject:
    """An object that lives in the other process; every operation is a request to it."""

    __slots__ = ("_sandbox_handle", "__weakref__")

    def __init__(self, handle):
        object.__setattr__(self, "_sandbox_handle", handle)

    def __getattr__(self, name):
        return _request("getattr", self, name)

    def __setattr__(self, name, value):
        _request("setattr", self, name, value)

    def __delattr__(self, name):
        _request("delattr", self, name)

    def __call__(self, *args, **kwargs):
        return _request("call", self, list(args), [[k, v] for k, v in kwargs.items()])

    def __repr__(self):
        return _op("repr", self)

    def __str__(self):
        return _op("str", self)

    def __format__(self, spec):
        return _op("format", self, spec)

    def __bytes__(self):
        return _op("bytes", self)

    def __hash__(self):
        return _op("hash", self)

    def __bool__(self):
        return _op("bool", self)

    def __len__(self):
        return _op("len", self)

    def __iter__(self):
        return _op("iter", self)

    def __next__(self):
        return _op("next", self)

    def __reversed__(self):
        return _op("reversed", self)

    def __contains__(self, item):
        return _op("contains", self, item)

    def __getitem__(self, key):
        return _op("getitem", self, key)

    def __setitem__(self, key, value):
        _op("setitem", self, key, value)

    def __delitem__(self, key):
        _op("delitem", self, key)

    def __int__(self):
        return _op("int", self)

    def __float__(self):
        return _op("float", self)

    def __complex__(self):
        return _op("complex", self)

    def __index__(self):
        return _op("index", self)

    def __round__(self, ndigits=None):
        return _op("round", self) if ndigits is None else _op("round", self, ndigits)

    def __trunc__(self):
        return _op("trunc", self)

    def __floor__(self):
        return _op("floor", self)

    def __ceil__(self):
        return _op("ceil", self)

    def __neg__(self):
        return _op("neg", self)

    def __pos__(self):
        return _op("pos", self)

    def __abs__(self):
        return _op("abs", self)

    def __invert__(self):
        return _op("invert", self)

    def __instancecheck__(self, instance):
        return _op("instancecheck", instance, self)

    def __subclasscheck__(self, subclass):
        return _op("subclasscheck", subclass, self)

    def __dir__(self):
        return _op("dir", self)

    def __enter__(self):
        return _op("enter", self)

    def __exit__(self, *exc_info):
        return _op("exit", self, *exc_info[:0])

    def __pow__(self, other, modulo=None):
        return _op("pow", self, other) if modulo is None else _op("pow", self, other, modulo)

    def __rpow__(self, other):
        return _op("pow", other, self)


def _binary(name):
    def forward(self, other):
        return _op(name, self, other)

    def reflected(self, other):
        return _op(name, other, self)

    return forward, reflected


for _name in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "lshift",
              "rshift", "and", "or", "xor", "divmod"):
    _forward, _reflected = _binary(_name)
    setattr(RemoteObject, f"__{_name}__", _forward)
    setattr(RemoteObject, f"__r{_name}__", _reflected)
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):  # Python itself mirrors these
    setattr(RemoteObject, f"__{_name}__", _binary(_name)[0])
del _name, _forward, _reflected


def _exit_operation(manager):
    return type(manager).__exit__(manager, None, None, None)


OPERATIONS = {}


def _operations():
    import math
    import operator
    return {
        "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
        "gt": operator.gt, "ge": operator.ge,
        "add": operator.add, "sub": operator.sub, "mul": operator.mul,
        "matmul": operator.matmul, "truediv": operator.truediv,
        "floordiv": operator.floordiv, "mod": operator.mod, "pow": pow,
        "lshift": operator.lshift, "rshift": operator.rshift, "and": operator.and_,
        "or": operator.or_, "xor": operator.xor, "divmod": divmod,
        "neg": operator.neg, "pos": operator.pos, "abs": operator.abs,
        "invert": operator.invert, "bool": operator.truth, "len": len, "hash": hash,
        "str": str, "repr": repr, "format": format, "bytes": bytes, "int": int,
        "float": float, "complex": complex, "index": operator.index, "round": round,
        "trunc": math.trunc, "floor": math.floor, "ceil": math.ceil, "iter": iter,
        "next": next, "reversed": reversed, "contains": operator.contains,
        "getitem": operator.getitem, "setitem": operator.setitem,
        "delitem": operator.delitem, "instancecheck": isinstance,
        "subclasscheck": issubclass, "dir": dir,
        "enter": lambda manager: type(manager).__enter__(manager),
        "exit": _exit_operation,
    }


OPERATIONS.update(_operations())
