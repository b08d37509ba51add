#!/usr/bin/env bash
# Table 1 (the published CPU preset) on another CPU kind, each chain in its own copy of this checkout, in parallel:
#   scratch   the whole chain from nothing: data, tokenizer, the vanilla mA, mA and mB (side by side), their evaluations
#   calm0     CALM seed 0 trained and evaluated on the published mA, mB, data and tokenizer (this checkout's
#             data/kv_arithmetic and models/kv_arithmetic/{vanilla,mA,mB,tokenizer}: `dvc checkout` from a DVC cache
#             that holds the committed ones, or `make table1` on a CPU kind that reproduces them: docs/reproducibility.md)
#   calm1/2   Table 5's CALM seeds 1 and 2 swept on the same published bases (sweep=cpu_kind, no report)
# DEADLINE=<seconds> stops what still runs then (a lent machine's call limit) and still collects what finished;
# WORK=<dir> RESUME=1 in a second call then keeps the workspaces, skips what finished (times.txt says rc=0) and
# resumes each killed training from its newest checkpoint (pipeline.train does; the bytes of an uninterrupted run).
# Prints each cell beside the committed one; $OUT (default /tmp/cpu_kind) receives cpu_kind.tgz (every log, md5,
# metrics file and model) and the printed comparison.
#   bash launch/table1_cpu_kind.sh
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/cpu_kind}; mkdir -p "$OUT"
WORK=${WORK:-$(mktemp -d)}
RES=$WORK/results; mkdir -p "$RES"   # logs, md5s, metrics, models: archived into $OUT at the end
PY=${PY:-python3}
END=$(( $(date +%s) + ${DEADLINE:-86400} ))   # DEADLINE seconds: stop whatever still runs then, and collect what finished
export WANDB_MODE=disabled HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TQDM_DISABLE=1 CALM_THREADS=${CALM_THREADS:-2}
for need in data/kv_arithmetic models/kv_arithmetic/vanilla models/kv_arithmetic/mA models/kv_arithmetic/mB models/kv_arithmetic/tokenizer; do
  [ -e "$ROOT/$need" ] || { echo "missing $need: the published bases are needed (dvc checkout from a cache that has them, or make table1 on a CPU that reproduces them)"; exit 2; }
done
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200 > "$RES/cpu.txt"
# every package a stage imports, some only inside functions (evaluate when scoring, ruamel.yaml when a sweep reads
# dvc.lock): a lent machine lacking one fails here in one line, not minutes into a training
"$PY" -c "import torch, transformers, datasets, accelerate, peft, safetensors, hydra, omegaconf, evaluate, ruamel.yaml, sacrebleu; print('torch', torch.__version__, 'transformers', transformers.__version__)" >> "$RES/cpu.txt" \
  || { echo "a package the stages import is missing (above): install requirements.txt first"; exit 2; }
cat "$RES/cpu.txt"

copy() {  # the checkout's own files (as git lists them; never .venv, the wheels or outputs), then the published bases if asked
  local dst=$WORK/$1
  [ "${RESUME:-0}" = 1 ] && [ -d "$dst" ] && return 0   # a second call: the workspace and its checkpoints stay
  mkdir -p "$dst"
  if git -C "$ROOT" rev-parse --git-dir > /dev/null 2>&1; then
    git -C "$ROOT" ls-files -co --exclude-standard -z | (cd "$ROOT" && xargs -0 cp --parents -t "$dst")
  else  # a copy without .git (a lent machine's): everything but what is never a source
    (cd "$ROOT" && tar --exclude=./.whl --exclude=./.venv --exclude=./data --exclude=./models -cf - .) | tar -xf - -C "$dst"
  fi
  mkdir -p "$dst/data" "$dst/models"
  rm -f "$dst"/reports/kv_arithmetic/metrics/*.json   # the committed figures: only this run's may be read back
  if [ "$2" = published ]; then
    cp -a "$ROOT/data/kv_arithmetic" "$dst/data/"; mkdir -p "$dst/models/kv_arithmetic"
    cp -a "$ROOT"/models/kv_arithmetic/{vanilla,mA,mB,tokenizer} "$dst/models/kv_arithmetic/"
  fi
}
run() {  # name, workspace, command...: its log and seconds into $RES
  local name=$1 ws=$2; shift 2
  if [ "${RESUME:-0}" = 1 ] && grep -q "^$name rc=0 " "$RES/times.txt" 2>/dev/null; then return 0; fi
  local t0=$(date +%s) left=$(( END - $(date +%s) ))
  [ $left -gt 0 ] || { echo "$name: not started, past DEADLINE" | tee -a "$RES/times.txt"; return 124; }
  (cd "$WORK/$ws" && timeout $left "$@") > "$RES/$name.log" 2>&1; local rc=$?
  echo "$name rc=$rc $(( $(date +%s) - t0 )) s" | tee -a "$RES/times.txt"
  return $rc
}
collect() {  # workspace: md5s and metrics into $RES/<ws>/
  local ws=$WORK/$1; mkdir -p "$RES/$1"
  (cd "$ws" && find data models reports -type f \( -name '*.safetensors' -o -name 'train_info.json' -o -path '*/metrics/*' \
      -o -name 'run.json' -o -path '*/predictions/*' -o -path 'data/*' -o -name 'tokenizer.json' \) -not -path '*/.cache/*' \
      -print0 | sort -z | xargs -0 md5sum) > "$RES/$1/md5.txt" 2>/dev/null
  (cd "$ws" && find reports -path '*/metrics/*.json' -o -name run.json | tar -cf - -T -) | tar -xf - -C "$RES/$1" 2>/dev/null
  (cd "$ws" && find data models reports -not -path "*checkpoint*" \( -name train_info.json -o -name model.safetensors -o -path "data/*" -type f \) | tar -chf - -T -) | tar -xf - -C "$RES/$1" 2>/dev/null
}

for ws in scratch:none calm0:published calm1:published calm2:published; do copy "${ws%%:*}" "${ws#*:}"; done
M="$PY -m pipeline"
(
  run data scratch $M.build_data kv_arithmetic && run tokenizer scratch $M.tokenizer kv_arithmetic && run vanilla scratch $M.train kv_arithmetic/vanilla &&
  { (run mA scratch $M.train kv_arithmetic/mA && run eval_mA scratch $M.evaluate kv_arithmetic/mA) &
    (run mB scratch $M.train kv_arithmetic/mB && run eval_mB scratch $M.evaluate kv_arithmetic/mB) & wait; }
  collect scratch
) &
( run calm0 calm0 $M.train kv_arithmetic/calm && run eval_calm0 calm0 $M.evaluate kv_arithmetic/calm; collect calm0 ) &
( run calm1 calm1 $M.sweep ablation=calm seed=1 sweep=cpu_kind report=false; collect calm1 ) &
( run calm2 calm2 $M.sweep ablation=calm seed=2 sweep=cpu_kind report=false; collect calm2 ) &
wait
cat "$RES/times.txt"

# each cell beside the committed one (the same bytes would give the same digits; the md5s say whether they are)
"$PY" - "$ROOT" "$RES" <<'PY' | tee "$RES/compare.txt"
import json, statistics, sys
from pathlib import Path
root, out = Path(sys.argv[1]), Path(sys.argv[2])
def scores(path):
    metrics = json.loads(path.read_text())["metrics"]
    return {k: v["score"] for k, v in metrics.items()}
committed = root / "reports/kv_arithmetic"
cells = [("mA", committed / "metrics/mA.json", out / "scratch/reports/kv_arithmetic/metrics/mA.json"),
         ("mB", committed / "metrics/mB.json", out / "scratch/reports/kv_arithmetic/metrics/mB.json"),
         ("calm seed 0", committed / "metrics/calm.json", out / "calm0/reports/kv_arithmetic/metrics/calm.json")]
cells += [(f"calm seed {s}", committed / f"sweeps/table5/calm-seed{s}/run.json",
           out / f"calm{s}/reports/kv_arithmetic/sweeps/cpu_kind/calm-seed{s}/run.json") for s in (1, 2)]
calm = {}
for name, ours, here in cells:
    if not here.exists():
        print(f"{name}: not finished here"); continue
    a, b = scores(ours), scores(here)
    print(f"{name}: " + ", ".join(f"{k} {a[k]} -> {b[k]}" for k in a))
    if name.startswith("calm"):
        for k in a:
            calm.setdefault(k, ([], []))
            calm[k][0].append(a[k]); calm[k][1].append(b[k])
for k, (a, b) in calm.items():
    if len(b) > 1:
        print(f"CALM {k} over seeds: committed {statistics.mean(a):.1f} +- {statistics.stdev(a):.1f}, "
              f"here {statistics.mean(b):.1f} +- {statistics.stdev(b):.1f}")
import hashlib
def md5(path):
    return hashlib.md5(path.read_bytes()).hexdigest()[:8] if path.exists() else "absent"
for rel in ["models/kv_arithmetic/" + m + "/model.safetensors" for m in ("vanilla", "mA", "mB")] + sorted(
        str(p.relative_to(root)) for p in (root / "data/kv_arithmetic").rglob("*") if p.is_file()):
    a, b = md5(root / rel), md5(out / "scratch" / rel)
    print(f"{rel}: published {a}, here {b}" + ("" if a == b else "  DIFFERS"))
PY
# one archive: a lent machine returns a limited number of files
tar -czf "$OUT/cpu_kind.tgz" -C "$RES" . && cp "$RES"/{cpu,times,compare}.txt "$OUT"/ && echo "results: $OUT/cpu_kind.tgz"
