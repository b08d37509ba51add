"""How long would `make repro JOBS=N` take, given the stage times of a run? A replay of the root DAG with them.

Reads the "Finished stage '<stage>' in <N> s" lines that `python -m pipeline.parallel_repro` prints (save them with
`make repro JOBS=2 | tee repro.log`), plans the stages `dvc repro [targets]` visits with DVC's own graph (as
parallel_repro does), and list-schedules them on each number of lanes: a stage starts once every stage it
depends on has finished and a lane is free, in parallel_repro's start order (most stages downstream first), in
DVC's plan order (which follows Python's string hashing: run to run it differs) or longest remaining chain of stage
times first (known only after a run). A stage that the log does not time (skipped, or cached) counts 0 s. The times
are those the stages took in that run: beside one another on 2 lanes, each at 0.7-0.85 of its solo speed, so N
lanes stand for N cores with the same thread count per stage. Also prints the longest dependency chain: no number
of lanes goes under it.

    python scripts/replay_schedule.py docs/measurements/repro-jobs2-2026-11-29.log --lanes 2 3 4 6
"""
from __future__ import annotations

import argparse
import heapq
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FINISHED = re.compile(r"Finished stage '(.+?)' in (\d+) s")


def replay(steps, upstream, seconds, lanes: int, priority) -> float:
    """Makespan of a list schedule: whenever a lane is free, start the ready stage that `priority` ranks first."""
    done, pending, running, now = set(), list(steps), [], 0.0
    while pending or running:
        ready = sorted((s for s in pending if all(u in done for u in upstream[s])), key=priority)
        for stage in ready[: lanes - len(running)]:
            pending.remove(stage)
            heapq.heappush(running, (now + seconds[stage], steps.index(stage), stage))
        now, _, stage = heapq.heappop(running)
        done.add(stage)
    return now


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="a parallel_repro run's output")
    parser.add_argument("targets", nargs="*", help="as the run's (default: the whole root pipeline)")
    parser.add_argument("--lanes", type=int, nargs="+", default=[2, 3, 4])
    args = parser.parse_args(argv)
    if not args.log.is_file():
        sys.exit(f"error: {args.log} not found")
    times = {name: float(s) for name, s in FINISHED.findall(args.log.read_text())}
    if not times:
        sys.exit(f"error: {args.log} has no \"Finished stage '...' in N s\" line (a parallel_repro run's output)")

    from dvc.repo import Repo
    from pipeline.parallel_repro import _plan, _start_order

    with Repo(str(ROOT)) as repo:
        graph, steps = _plan(repo, args.targets)
        names = {s: s.addressing for s in steps}
        upstream = {s: [u for u in graph.successors(s) if u in names] for s in steps}
    seconds = {s: times.get(names[s], 0.0) for s in steps}
    unknown = sorted(set(times) - set(names.values()))
    if unknown:
        sys.exit(f"error: the log times stages this pipeline does not plan: {', '.join(unknown[:3])}")
    downstream = {s: [d for d in steps if s in upstream[d]] for s in steps}
    chain = {}  # the longest chain of stage times from a stage to the end of the DAG
    for s in reversed(steps):
        chain[s] = seconds[s] + max((chain[d] for d in downstream[s]), default=0.0)
    order = _start_order(graph, steps)  # what parallel_repro starts first, knowing no stage's time

    print(f"{len(steps)} stages planned, {len(times)} timed in {args.log.name}: "
          f"{sum(seconds.values()) / 60:.1f} min of stage time, longest chain {max(chain.values()) / 60:.1f} min")
    for lanes in args.lanes:
        in_order = replay(steps, upstream, seconds, lanes, steps.index)
        longest = replay(steps, upstream, seconds, lanes, lambda s: (-chain[s], steps.index(s)))
        ours = replay(steps, upstream, seconds, lanes, order.index)
        print(f"  {lanes} lane{'s' if lanes > 1 else ' '}: {ours / 60:5.1f} min in parallel_repro's order, "
              f"{in_order / 60:5.1f} in DVC's plan order (it varies with Python's hash seed), "
              f"{longest / 60:5.1f} longest chain of stage times first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
