"""`dvc repro` with several stages at a time: `python -m pipeline.parallel_repro [--jobs N] [target ...]`.

DVC runs one stage at a time in a workspace, and a second `dvc repro` in the same checkout stops on DVC's lock,
while a stage of the CPU worlds leaves much of a 2-core CPU idle at its 2 threads (docs/performance.md). This runs
the stages `dvc repro <targets>` would run, each with the same command and environment, up to N at a time, each as
soon as the stages it depends on are recorded; and it records each one as `dvc repro` does, through DVC's own stage
methods: `changed` (a stage that did not change is skipped), `remove_outs`, the run cache, `save`, `commit`,
`dump` (dvc.lock). A stage's thread count is its own (`runtime.threads`, part of the float path:
docs/reproducibility.md), so every output is the bytes `dvc repro` writes, and a `dvc repro` afterwards runs
nothing. The DVC lock is held for the whole run (`dvc repro` lets go of it while a command runs), so no other DVC
command changes the workspace meanwhile.

Each stage's output goes to .dvc/tmp/parallel_repro/<stage>.log. The first stage that fails stops new starts; the
stages still running finish and are recorded; then the failing stage's last log lines and one line naming it, and
exit status 2. Relies on DVC's Stage API of the pinned dvc release (requirements.txt);
tests/process/test_parallel_repro.py checks the lock it writes against a sequential `dvc repro`."""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from pipeline.cli import cli
from pipeline.errors import PipelineError

LOG_DIR = Path(".dvc/tmp/parallel_repro")


def _plan(repo, targets: list[str]):
    """The stages `dvc repro <targets>` visits, dependencies first, and the graph (a stage's successors are the
    stages it depends on)."""
    from dvc.repo.reproduce import collect_stages, get_active_graph, plan_repro

    graph = get_active_graph(repo.index.graph)
    return graph, plan_repro(graph, collect_stages(repo, targets or ["dvc.yaml"]))


def _start_order(graph, steps: list) -> list:
    """The planned stages in the order a free slot takes them once they are ready: those with the most stages on
    the chain below them first, then by name. DVC's plan order follows Python's string hashing, so it changes from
    run to run, and with it the wall time: replayed with one run's stage times (scripts/replay_schedule.py), the
    code_xtok world took 86-122 min on 2 lanes across hash seeds (training the composition last is the slow case)
    and 87.9 in this order, every time."""
    planned = set(steps)
    downstream = {s: [] for s in steps}
    for s in steps:
        for u in graph.successors(s):
            if u in planned:
                downstream[u].append(s)
    depth = {}
    for s in reversed(steps):  # dependencies first: a stage's downstream are all behind it
        depth[s] = 1 + max((depth[d] for d in downstream[s]), default=0)
    return sorted(steps, key=lambda s: (-depth[s], s.addressing))


def _record(stage) -> None:
    """What `Stage.run` does after the command, and `dvc repro` after the stage: hash the deps and outs, put the
    outs in the cache (and the run cache), write the stage's dvc.lock entry."""
    uncached = any(not out.use_cache for out in stage.outs if not (out.is_metric or out.is_plot))
    stage.save(run_cache=not uncached)
    stage.commit()
    stage.dump(update_pipeline=False)


def _log_name(stage) -> str:
    return stage.addressing.replace("/", "_").replace(":", "_").replace("@", "_") + ".log"


class _Running:
    def __init__(self, stage, log: Path):
        from dvc.stage.run import _enforce_cmd_list, _make_cmd, get_executable, prepare_kwargs

        self.stage, self.log, self.start = stage, log, time.monotonic()
        kwargs = prepare_kwargs(stage)  # DVC's environment for a stage command (DVC_ROOT, DVC_STAGE, cwd)
        command = " && ".join(_enforce_cmd_list(stage.cmd))  # a list of commands stops at the first failure
        self.output = open(log, "w")
        self.process = subprocess.Popen(_make_cmd(get_executable(), command), stdout=self.output,
                                        stderr=subprocess.STDOUT, **kwargs)

    def finished(self) -> int | None:
        code = self.process.poll()
        if code is not None:
            self.output.close()
        return code


def parallel_repro(targets: list[str], jobs: int, root: str = ".") -> None:
    from dvc.repo import Repo, lock_repo
    from dvc.stage.cache import RunCacheNotFoundError

    with Repo(root) as repo, lock_repo(repo):
        log_dir = Path(repo.root_dir) / LOG_DIR
        log_dir.mkdir(parents=True, exist_ok=True)
        graph, steps = _plan(repo, targets)
        planned = set(steps)
        pending, recorded, running, failed = _start_order(graph, steps), set(), [], None

        def upstream(stage):
            return [s for s in graph.successors(stage) if s in planned]

        def start(stage) -> bool:
            """Starts the stage's command; True when there was none to start (the stage is recorded already)."""
            ups = upstream(stage)
            if stage.frozen or not stage.cmd:  # nothing to run: DVC's own step verifies and records it
                if stage.reproduce(upstream=ups):
                    stage.dump(update_pipeline=False)
                return True
            if not stage.changed(upstream=ups):
                print(f"Stage '{stage.addressing}' didn't change, skipping", flush=True)
                return True
            stage.remove_outs(ignore_remove=False, force=False)
            try:  # the run cache: these deps, params and command ran before, so their outputs are in the cache
                repo.stage_cache.restore(stage)
            except RunCacheNotFoundError:
                stage.save_deps()
            else:  # DVC said so ("Stage ... is cached - skipping run") and checked the outputs out
                _record(stage)
                return True
            log = log_dir / _log_name(stage)
            print(f"Running stage '{stage.addressing}' (log: {log.relative_to(repo.root_dir)})", flush=True)
            running.append(_Running(stage, log))
            return False

        try:
            while pending or running:
                progressed = False
                for stage in list(pending):
                    if failed or len(running) >= jobs:
                        break
                    if all(s in recorded for s in upstream(stage)):
                        pending.remove(stage)
                        if start(stage):
                            recorded.add(stage)
                        progressed = True
                for run in list(running):
                    code = run.finished()
                    if code is None:
                        continue
                    running.remove(run)
                    progressed = True
                    if code == 0:
                        _record(run.stage)
                        recorded.add(run.stage)
                        print(f"Finished stage '{run.stage.addressing}' in {time.monotonic() - run.start:.0f} s",
                              flush=True)
                    elif failed is None:
                        failed = (run, code)
                if failed and not running:
                    break
                if not progressed:
                    time.sleep(0.2)
        except BaseException:  # Ctrl-C (the terminal's SIGINT reached the stages too) or a stage DVC cannot record
            for run in running:  # no stage keeps running unrecorded behind the error
                run.process.terminate()
                run.process.wait()
            raise
    if failed:
        run, code = failed
        print("\n".join(run.log.read_text(errors="replace").splitlines()[-20:]), file=sys.stderr)
        raise PipelineError(f"stage '{run.stage.addressing}' failed (exit status {code}); its whole output: {run.log}")


@cli
def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m pipeline.parallel_repro")
    parser.add_argument("targets", nargs="*", help="stages or dvc.yaml files, as `dvc repro` takes them")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="stages at a time (default 2)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        raise PipelineError(f"--jobs {args.jobs}: at least one stage at a time")
    from dvc.exceptions import DvcException

    try:
        parallel_repro(args.targets, args.jobs)
    except DvcException as error:  # a target that names no stage, a lock another DVC process holds, ...
        raise PipelineError(f"dvc: {error}") from None


if __name__ == "__main__":
    main()
