#!/usr/bin/env bash
# The `paper` preset's whole Table 1 chain at full data size, with 3 training steps per model: checks that the
# paper's shapes (25K keys, 3-6 keys per expression, + - x, direct targets) go through the same stages, and
# times the data build. Not a result: the models are untrained.
#   bash scripts/paper_preset_smoke.sh [WORKDIR]      (default /tmp/paper-preset-smoke; needs ~2 GB RAM)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/paper-preset-smoke}
mkdir -p "$work" && cd "$work"
export PYTHONPATH=$repo CALM_PARAMS=$work/params.yaml WANDB_MODE=disabled
py=$repo/.venv/bin/python
# the paper preset selects runtime=cuda; this smoke runs its shapes on the CPU
$py -c "
from pipeline.params import compose_params, dump_params
steps = [f'worlds.kv_arithmetic.models.{m}.train.steps=3' for m in ('vanilla', 'mA', 'mB', 'calm')]
dump_params(compose_params(['preset=paper', 'runtime=cpu', *steps]), '$work/params.yaml')
"
/usr/bin/time -f "build_data: %e s, peak RSS %M KB" $py -m pipeline.build_data kv_arithmetic
$py -m pipeline.tokenizer kv_arithmetic
for model in vanilla mA mB calm; do /usr/bin/time -f "train $model: %e s" $py -m pipeline.train kv_arithmetic/$model; done
$py -c "import json; s = json.load(open('data/kv_arithmetic/summary.json')); print({k: s[k] for k in ('n_keys', 'n_held_in', 'held_in_selection', 'kv_math_format', 'answer_format', 'max_chars')})"
