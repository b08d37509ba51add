"""What crosses the sandbox protocol by copy or by name (see `_sandbox_protocol`): the builtin types and functions
that cross by name, the default factories a defaultdict may have, the mutable containers written back after a
call, the tags of the sequence types, and the helpers `Endpoint` encodes with."""
import builtins
import collections

MAX_DEPTH = 200  # deeper containers cross as references

# Builtins that reach into an interpreter (its code, frames, names, files): they never
# cross by name, and the test side never lets one of its own cross at all.
INTROSPECTION_BUILTINS = ("eval", "exec", "compile", "getattr", "setattr", "delattr", "vars",
                          "globals", "locals", "dir", "open", "breakpoint", "input",
                          "__import__")
_BUILTIN_NAMES = {}  # id(builtin type or function) -> name, taken before any program ran
for _name, _value in vars(builtins).items():
    if not _name.startswith("_") and _name not in INTROSPECTION_BUILTINS and (
            isinstance(_value, type) or type(_value) is type(len)):
        _BUILTIN_NAMES.setdefault(id(_value), _name)
_BUILTIN_VALUES = {name: getattr(builtins, name) for name in _BUILTIN_NAMES.values()}
_BUILTIN_EXCEPTIONS = {name: value for name, value in _BUILTIN_VALUES.items()
                       if isinstance(value, type) and issubclass(value, BaseException)}
_DEFAULT_FACTORIES = {"list": list, "dict": dict, "set": set, "int": int, "float": float,
                      "str": str, "tuple": tuple, "bool": bool, "bytes": bytes}
_FACTORY_NAMES = {id(value): name for name, value in _DEFAULT_FACTORIES.items()}
# Mutable containers: recorded when they cross, written back in place after a call.
_MUTABLE = (list, dict, set, bytearray, collections.deque, collections.OrderedDict,
            collections.Counter, collections.defaultdict)
_SEQUENCE_TAGS = {list: "l", tuple: "t", set: "s", frozenset: "fs"}


def _int(value):
    return ["i", format(value, "x")]  # hex: exact, and free of int<->str digit limits


def _nearest_builtin_exception(cls):
    for base in cls.__mro__:
        if _BUILTIN_EXCEPTIONS.get(getattr(base, "__name__", None)) is base:
            return base.__name__
    return "Exception"


def _write_back(original, new):
    if type(original) in (list, bytearray):
        original[:] = new
    elif type(original) is collections.deque:
        original.clear()
        original.extend(new)
    else:  # set and the dicts
        original.clear()
        if type(original) is set:
            original.update(new)
        else:
            for key, value in new.items():
                dict.__setitem__(original, key, value)


del _name, _value
