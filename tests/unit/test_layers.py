"""The package's layers (issue 31), checked over its import graph so that they stay.

Stage entry points and the params/DAG they share sit on top; the libraries below them never import a stage; the
leaf modules at the bottom (errors, io, the output layout, ...) import nothing above them. A module imports only
modules of its own part of its layer and of the layers below it, and no modules import one another in a cycle.
Imports count from any scope: one inside a function runs whenever the function does (the graph is the one
pipeline/code_deps.py reads for each stage's DVC deps).
"""
from __future__ import annotations

import pytest

from pipeline.code_deps import imported_modules, package_modules

# highest first. A layer is one or more parts that may not import one another; the modules of one part may
# import each other (acyclically). A module belongs to the part naming it or the package holding it.
LAYERS = (
    ("stages", [("pipeline.params", "pipeline.stages", "pipeline.checks", "pipeline.code_deps",
                 "pipeline.build_data", "pipeline.tokenizer", "pipeline.synthesize", "pipeline.train", "pipeline.evaluate",
                 "pipeline.report", "pipeline.report_cells", "pipeline.seed_tables", "pipeline.figure", "pipeline.sweep",
                 "pipeline.records", "pipeline.launch", "pipeline.parallel_repro",
                 # the benchmark command line: an entry point, which loads its model through the one loader
                 # (pipeline.training.kinds.load_model)
                 "pipeline.benchmarks.__main__")]),
    ("training", [("pipeline.training",)]),
    ("tokenization, scoring", [("pipeline.tokenization",), ("pipeline.scoring",)]),
    ("worlds", [("pipeline.worlds",)]),
    ("benchmarks", [("pipeline.benchmarks",)]),
    ("sandbox", [("pipeline.sandbox",)]),
    ("composition, generation", [("pipeline.composition",), ("pipeline.generation",)]),
    # benchmarks/errors: the benchmark package's exceptions, SandboxError among them, which the sandbox raises
    ("leaves", [("pipeline", "pipeline.errors", "pipeline.io", "pipeline.layout", "pipeline.cli", "pipeline.hub",
                 "pipeline.text", "pipeline.float_path", "pipeline.tracking", "pipeline.distributed",
                 "pipeline.benchmarks.errors")]),
)


def _owner(module: str) -> tuple[int, int] | None:
    """(layer index, part index) of the part a module belongs to: the one naming it, else the one naming the
    package that holds it (the longest name wins); None when no part does."""
    best, best_len = None, -1
    for i, (_, parts) in enumerate(LAYERS):
        for j, names in enumerate(parts):
            for name in names:
                holds = module == name or (name != "pipeline" and module.startswith(name + "."))
                if holds and len(name) > best_len:
                    best, best_len = (i, j), len(name)
    return best


def _graph() -> dict[str, set[str]]:
    return {m: imported_modules(m) for m in package_modules()}


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        here = _owner(module)
        for target in sorted(targets):
            there = _owner(target)
            if here is None or there is None or there[0] > here[0] or there == here:
                continue
            where = "a layer above" if there[0] < here[0] else "another part of its layer"
            found.append(f"{module} ({LAYERS[here[0]][0]}) imports {target} ({LAYERS[there[0]][0]}: {where})")
    return found


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


@pytest.fixture(scope="module")
def graph():
    return _graph()


def test_every_module_has_a_layer(graph):
    """A new module is placed in a layer on purpose: one no part names fails here."""
    assert not [m for m in graph if _owner(m) is None]


def test_no_module_imports_a_layer_above_or_a_sibling_part(graph):
    """Libraries (training, worlds, scoring, benchmarks, composition, ...) never import the stage/params layer."""
    violations = layer_violations(graph)
    if violations:
        pytest.fail("\n".join(violations), pytrace=False)


def test_no_import_cycle(graph):
    cycle = import_cycle(graph)
    if cycle:
        pytest.fail("import cycle: " + " -> ".join(cycle), pytrace=False)


def test_the_checks_see_a_violation():
    """The checks themselves: a library importing a stage is one violation and, stage importing it back, a cycle."""
    bad = {"pipeline.stages": {"pipeline.training.kinds"}, "pipeline.training.kinds": {"pipeline.stages"}}
    assert layer_violations(bad) == ["pipeline.training.kinds (training) imports pipeline.stages (stages: a layer above)"]
    assert import_cycle(bad) == ["pipeline.stages", "pipeline.training.kinds", "pipeline.stages"]
