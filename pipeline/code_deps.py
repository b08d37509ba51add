"""The source files a stage runs, derived from the import graph, so that DVC reruns a stage whenever code it runs
changes and never when code it does not run changes (dvc.yaml lists them through `dvc_stages.*.code`).

A module's closure is every `pipeline` module it imports, at any depth and from any scope (the package imports
inside functions, which a stage still runs), plus every file of `pipeline/` whose name its code holds in a string (not a docstring or comment): the
code sandbox starts `_sandbox_boot.py` as a script, and a world reads `resources/udhr_char_stats.json`. A world
module is added by its stages explicitly: they import it by the name conf/ gives (pipeline/worlds/__init__.py).
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

PACKAGE = "pipeline"
ROOT = Path(__file__).resolve().parent.parent
_FILE_NAME = re.compile(r"[\w.-]+\.(?:py|json|txt|yaml)")


def _module_file(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imported(module: str, path: Path, tree: ast.Module) -> list[str]:
    """The `pipeline` modules a module's source imports, anywhere in it (`from x import y` may name a module y)."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            names += [target] + [f"{target}.{a.name}" for a in node.names]
    return [n for n in names if n.split(".")[0] == PACKAGE]


def _code_strings(tree: ast.Module) -> str:
    """The string constants the code itself holds (f-string parts included), docstrings and comments left out: a
    file named in prose (`see pipeline/sweep.py`) is not one the module runs or reads."""
    bodies = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docstrings = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, bodies) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return "\n".join(n.value for n in ast.walk(tree)
                     if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings)


def _mentioned(path: Path, tree: ast.Module) -> list[Path]:
    """Files of pipeline/ (beside this one or in a folder below it) whose name the code names in a string."""
    found = []
    for name in set(_FILE_NAME.findall(_code_strings(tree))):
        for candidate in (path.parent / name, *path.parent.glob(f"*/{name}")):
            if candidate.is_file() and candidate != path:
                found.append(candidate)
    return found


def _sibling_imports(path: Path, tree: ast.Module) -> list[Path]:
    """Modules of its own folder that a script imports by plain name (`import _sandbox_protocol`)."""
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level]
    return [path.parent / f"{n.split('.')[0]}.py" for n in names if (path.parent / f"{n.split('.')[0]}.py").is_file()]


def package_modules() -> list[str]:
    """Every module of the package, by its dotted name (a package by its own name, for its __init__.py)."""
    names = []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def imported_modules(module: str) -> set[str]:
    """The `pipeline` modules `module` imports, from any scope, as modules (`from x import function`: x)."""
    path = _module_file(module)
    names = _imported(module, path, ast.parse(path.read_text()))
    return {n for n in names if n != module and _module_file(n) is not None}


@functools.lru_cache(maxsize=None)
def closure(module: str) -> tuple[str, ...]:
    """Repository-relative paths of the files `module` runs, sorted."""
    seen: set[Path] = set()
    todo_modules, todo_files = [module], []
    while todo_modules or todo_files:
        if todo_modules:
            name = todo_modules.pop()
            path = _module_file(name)
            if path is None:
                continue  # `from pipeline.x import function`: the name is not a module
            parents = name.split(".")
            todo_modules += [".".join(parents[:i]) for i in range(1, len(parents))]  # packages' __init__ run first
        else:
            path = todo_files.pop()
        if path in seen:
            continue
        seen.add(path)
        if path.suffix != ".py":
            continue
        modules, files = _references(path)
        todo_modules += modules
        todo_files += files
    return tuple(sorted(str(p.relative_to(ROOT)) for p in seen))


@functools.lru_cache(maxsize=None)
def _references(path: Path) -> tuple[tuple[str, ...], tuple[Path, ...]]:
    """The `pipeline` modules a source file imports and the files it names or imports by plain name: each file
    parsed once per process, however many stages' closures reach it."""
    # a module's dotted name is its path's; a script a module starts resolves its imports the same way
    parts = path.relative_to(ROOT).with_suffix("").parts
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    tree = ast.parse(path.read_text())
    return tuple(_imported(name, path, tree)), tuple(_mentioned(path, tree) + _sibling_imports(path, tree))


@functools.lru_cache(maxsize=None)
def _folder_files() -> dict[str, frozenset[str]]:
    """Every folder of the package with the files DVC hashes for it (its own and its subfolders'; bytecode left out,
    as .dvcignore leaves it out), repository-relative."""
    files: dict[str, set[str]] = {}
    for path in (ROOT / PACKAGE).rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            rel = path.relative_to(ROOT)
            for parent in rel.parents[:-1]:
                files.setdefault(str(parent), set()).add(str(rel))
    return {folder: frozenset(names) for folder, names in files.items()}


def folded(files: set[str]) -> list[str]:
    """`files` with each outermost folder whose files are all among them written as that folder, sorted: DVC hashes
    a folder dependency whole, so a stage's lock entry lists a few folders instead of every file in them (dvc.lock
    then parses several times faster, and a stage still reruns when any file it runs changes)."""
    folders = [f for f, names in sorted(_folder_files().items()) if names <= files]
    outermost = [f for f in folders if not any(f.startswith(g + "/") for g in folders)]
    kept = {f for f in files if not any(f.startswith(g + "/") for g in outermost)}
    return sorted(kept | set(outermost))


def covers(paths: list[str], file: str) -> bool:
    """Whether a stage's code dependencies (files and folders) hold `file`."""
    return any(file == p or file.startswith(p + "/") for p in paths)


def stage_code(entry: str, *world_modules: str) -> list[str]:
    """The files a stage `python -m <entry>` runs for these worlds, folded into folders where it runs all of one."""
    files = set(closure(entry))
    for module in world_modules:
        files.update(closure(module))
    return folded(files)
