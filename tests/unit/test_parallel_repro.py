"""parallel_repro's start order: the same whatever order DVC plans the stages in (DVC's follows Python's string
hashing, so it changes from run to run), and the stages with the longest chain below them first. The runner itself
(its lock against a sequential `dvc repro`) is tests/process/test_parallel_repro.py."""
import random
from dataclasses import dataclass

import networkx as nx

from pipeline.parallel_repro import _start_order


@dataclass(frozen=True)
class Stage:
    addressing: str


def code_xtok_like_dag():
    """A world's DAG as DVC holds it: an edge from a stage to each stage it depends on."""
    depends = {"build_data": [], "build_tokenizer": ["build_data"],
               "train/mB": ["build_tokenizer"], "train/mA": ["build_tokenizer"],
               "train/calm": ["train/mB", "train/mA"], "train/lora": ["train/mB", "train/mA"],
               "train/skyline": ["train/mB"], "report": []}
    for model in ("mA", "mB", "calm", "lora", "skyline"):
        depends[f"evaluate/{model}"] = [f"train/{model}"]
        depends["report"] += [f"train/{model}", f"evaluate/{model}"]
    stages = {name: Stage(name) for name in depends}
    graph = nx.DiGraph()
    graph.add_nodes_from(stages.values())
    graph.add_edges_from((stages[s], stages[u]) for s, ups in depends.items() for u in ups)
    return graph, stages


def plan_orders(graph, n: int, seed: int = 0):
    """n plans of the graph, dependencies first, ties between ready stages broken at random (as hashing does)."""
    rng = random.Random(seed)
    for _ in range(n):
        left = {s: set(graph.successors(s)) for s in graph}
        plan = []
        while left:
            ready = sorted((s for s, ups in left.items() if not ups), key=lambda s: s.addressing)
            pick = rng.choice(ready)
            plan.append(pick)
            del left[pick]
            for ups in left.values():
                ups.discard(pick)
        yield plan


def test_the_start_order_is_one_order_for_every_plan_and_puts_the_longest_chains_first():
    graph, stages = code_xtok_like_dag()
    orders = {tuple(s.addressing for s in _start_order(graph, plan)) for plan in plan_orders(graph, 200)}
    assert len(orders) == 1
    order = list(next(iter(orders)))
    # each stage before every stage with a shorter chain below it: the composition trains before any evaluation
    evaluations = [order.index(f"evaluate/{m}") for m in ("mA", "mB", "calm", "lora", "skyline")]
    assert order.index("train/calm") < min(evaluations)
    assert order[:5] == ["build_data", "build_tokenizer", "train/mA", "train/mB", "train/calm"]
    assert order[-1] == "report"


def test_stages_outside_the_plan_add_no_depth():
    """A chain DVC will not run (stages the targets do not reach, or already done) does not rank a stage first."""
    stages = {n: Stage(n) for n in ("a", "b", "c", "d", "e", "x", "y", "z")}
    graph = nx.DiGraph()  # b, x depend on a; y on x; z on y; d on c; e on d
    graph.add_edges_from((stages[s], stages[u]) for s, u in (("b", "a"), ("x", "a"), ("y", "x"), ("z", "y"),
                                                              ("d", "c"), ("e", "d")))
    plan = [stages[n] for n in ("a", "b", "c", "d", "e")]
    assert [s.addressing for s in _start_order(graph, plan)] == ["c", "a", "d", "b", "e"]
