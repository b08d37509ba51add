#!/usr/bin/env bash
# Table 1's recipe with other seeds for its base models: how far CALM's figures move when the vanilla mA, mA and mB
# are trained again from the same data with another seed (their init and data order), beside the composition's own
# seeds. The float paths' gap (docs/results-table1.md) sits in the bases; this says how large a gap a base seed
# alone makes on one path.
#   bash experiments/table1/base_seeds.sh <base seed>      # e.g. 1; run two at once for seeds 1 and 2
#   python experiments/table1/base_seed_spread.py $WORK     # the table: each base seed's CALM seeds, and seed 0's
# CALM_OVERRIDES="<hydra overrides>" changes the recipe for every stage of the clone (e.g. the composition's
# dropouts); the bases do not read those values, so they stay the base seed's bytes. Use another WORK for each.
# For the base seed it makes a fresh clone of this checkout's HEAD at $WORK/base<seed> (WORK default
# /tmp/base_seeds), sets `seed: <base seed>` on the three bases (data and tokenizer stay the published ones: they
# follow the global seed), runs `dvc repro report@table1` there (bases, CALM seed 0, the evaluations), then CALM
# seeds 1 and 2 on the same bases through the train and evaluate stages, and copies each metrics file to
# $WORK/base<seed>/results/. The float path is the environment's (the pinned AVX2 path unless CALM_FLOAT_PATH says
# otherwise); 2 threads a process as published. About 25 min alone on a 2-core CPU, 50 min two at a time.
set -euo pipefail
[ $# -eq 1 ] && [[ $1 =~ ^[0-9]+$ ]] || {
  echo "usage: bash experiments/table1/base_seeds.sh <base seed: an integer>"; exit 2; }
SEED=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${WORK:-/tmp/base_seeds}
DIR=$WORK/base$SEED
PY=$ROOT/.venv/bin/python
[ -x "$PY" ] || { echo "no $ROOT/.venv: run make setup first"; exit 2; }
[ -e "$DIR" ] && { echo "$DIR exists: remove it or choose another WORK"; exit 2; }
export PATH="$ROOT/.venv/bin:$PATH" WANDB_MODE=disabled TQDM_DISABLE=1
mkdir -p "$WORK"
git clone -q "$ROOT" "$DIR"
ln -s "$ROOT/.venv" "$DIR/.venv"
# params.yaml is composed for every CPU world, and the language and code worlds check ../shared/benchmarks then
[ -e "$WORK/shared" ] || [ ! -d "$ROOT/../shared" ] || ln -s "$(cd "$ROOT/../shared" && pwd)" "$WORK/shared"
trap 'echo "base seed $SEED: failed; the log: $DIR/results/log.txt"' ERR
cd "$DIR"
models=worlds.kv_arithmetic.models
bases="+$models.vanilla.seed=$SEED +$models.mA.seed=$SEED +$models.mB.seed=$SEED"
recipe="$bases ${CALM_OVERRIDES:-}"
mkdir -p results
echo "${CALM_OVERRIDES:-}" > results/overrides.txt
python -m pipeline.params $recipe > results/log.txt 2>&1
dvc repro report@table1 >> results/log.txt 2>&1
for m in mA mB; do cp "reports/kv_arithmetic/metrics/$m.json" "results/$m.json"; done
cp reports/kv_arithmetic/metrics/calm.json results/calm-seed0.json
cp reports/kv_arithmetic/predictions/calm.jsonl results/calm-seed0.jsonl
for c in 1 2; do
  python -m pipeline.params $recipe "$models.calm.seed=$c" >> results/log.txt 2>&1
  python -m pipeline.train kv_arithmetic/calm >> results/log.txt 2>&1
  python -m pipeline.evaluate kv_arithmetic/calm >> results/log.txt 2>&1
  cp reports/kv_arithmetic/metrics/calm.json "results/calm-seed$c.json"
  cp reports/kv_arithmetic/predictions/calm.jsonl "results/calm-seed$c.jsonl"
done
echo "base seed $SEED: done ($DIR/results)"
