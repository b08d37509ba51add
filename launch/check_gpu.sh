#!/usr/bin/env bash
# The GPU runtimes proven end to end on the machine this runs on: the micro preset's key-value world (Table 1's
# chain: data, tokenizer, mA, mB and CALM trained and evaluated, the report) through `dvc repro`, once per
# runtime of conf/runtime, each in a fresh workspace of its own (pipeline.params' presets/micro/). Prints the
# versions and the GPU, each run's seconds, what train_info.json recorded (loss history, processes, sharded),
# its Table 1 and each model's md5 (runtime=cpu: the same on every x86-64 CPU with AVX2, on the pinned path;
# docs/library.md has this repository's), then compares the CALM each runtime saved with the first runtime's:
# the same parameter names (the composition's alone, never a base's) and the largest weight difference.
#
#   bash launch/check_gpu.sh [runtime ...]     default: cuda multi_gpu fsdp (cpu works too, as a dry run)
#
# Run from a checkout after `make setup` (or with the packages of requirements.txt importable by python3).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNTIMES=("$@")
[ ${#RUNTIMES[@]} -gt 0 ] || RUNTIMES=(cuda multi_gpu fsdp)
PY=${PY:-$( [ -x "$ROOT/.venv/bin/python" ] && echo "$ROOT/.venv/bin/python" || command -v python3 )}
WORK=${WORK:-$(mktemp -d)}
export WANDB_MODE=disabled HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1

# dvc.yaml's commands say `python` and `dvc`: both must be this interpreter's
mkdir -p "$WORK/bin"
rm -f "$WORK/bin/python" "$WORK/bin/dvc"   # never write through a link left there
printf '#!/bin/sh\nexec "%s" "$@"\n' "$PY" > "$WORK/bin/python" && chmod +x "$WORK/bin/python"
printf '#!/bin/sh\nexec "%s" -m dvc "$@"\n' "$PY" > "$WORK/bin/dvc" && chmod +x "$WORK/bin/dvc"
export PATH="$WORK/bin:$(dirname "$PY"):$PATH"

"$PY" - <<'EOF'
import platform, torch, transformers, accelerate
print(f"python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
      f"accelerate {accelerate.__version__}")
if torch.cuda.is_available():
    print(f"GPUs: {torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}, CUDA {torch.version.cuda}, "
          f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, bf16 {torch.cuda.is_bf16_supported()}")
else:
    print("no GPU")
EOF

# the checkout as git lists it (a copy without .git, e.g. a tarball: made a repository first)
if ! git -C "$ROOT" rev-parse --git-dir > /dev/null 2>&1; then
  git -C "$ROOT" init -q && git -C "$ROOT" add -A && git -C "$ROOT" -c user.name=c -c user.email=c@c commit -qm checkout
fi

passed=() failed=()
for rt in "${RUNTIMES[@]}"; do
  repo="$WORK/$rt"
  rm -rf "$repo" && mkdir -p "$repo"
  git -C "$ROOT" ls-files -co --exclude-standard -z | (cd "$ROOT" && xargs -0 cp --parents -t "$repo")
  (cd "$repo" && git init -q && git add -A && git -c user.name=c -c user.email=c@c commit -qm copy)
  (cd "$repo" && "$PY" -m pipeline.params preset=micro "runtime=$rt" "world=[kv_arithmetic]" > /dev/null)
  ws="$repo/presets/micro"
  echo "== runtime=$rt: dvc repro report@table1 in $ws"
  t0=$(date +%s)
  if ! (cd "$ws" && dvc repro -q report@table1) > "$WORK/$rt.log" 2>&1; then
    tail -40 "$WORK/$rt.log"; echo "   FAILED (log: $WORK/$rt.log)"; failed+=("$rt"); continue
  fi
  passed+=("$rt")
  echo "   $(( $(date +%s) - t0 )) s"
  "$PY" - "$ws" <<'EOF'
import hashlib, json, sys
from pathlib import Path
ws = Path(sys.argv[1])
for m in ("mA", "mB", "calm"):
    info = json.loads((ws / "models/kv_arithmetic" / m / "train_info.json").read_text())
    losses = " ".join(f"{loss:.6f}" for _, loss in info["loss_history"])
    print(f"   {m}: {info['steps']} steps, losses {losses}; processes {info.get('processes', 1)}, "
          f"sharded {info.get('sharded', False)}, float path {info.get('float_path')}")
print("".join("   " + line + "\n" for line in (ws / "reports/table1.md").read_text().splitlines() if "|" in line))
# runtime=cpu on another CPU kind (a GPU machine's host): the same md5s as here mean the pinned float path holds
print("   md5 of each model.safetensors: " + ", ".join(
    f"{m} {hashlib.md5((ws / 'models/kv_arithmetic' / m / 'model.safetensors').read_bytes()).hexdigest()}"
    for m in ("mA", "mB", "calm")))
EOF
done

[ ${#passed[@]} -gt 0 ] && "$PY" - "$WORK" "${passed[@]}" <<'EOF'
import sys
from pathlib import Path
from safetensors.torch import load_file
work, runtimes = Path(sys.argv[1]), sys.argv[2:]
saved = {rt: load_file(next((work / rt / "presets/micro/models/kv_arithmetic/calm").glob("*.safetensors")))
         for rt in runtimes}
first = runtimes[0]
names = sorted(saved[first])
print(f"CALM saved by runtime={first}: {len(names)} tensors, all of the composition: "
      f"{all(not n.startswith(('anchor', 'augmenting')) for n in names)} (e.g. {names[0]})")
for rt in runtimes[1:]:
    same = sorted(saved[rt]) == names
    diff = max((saved[rt][n].float() - saved[first][n].float()).abs().max().item() for n in names) if same else None
    print(f"runtime={rt} against runtime={first}: same parameter names {same}, largest weight difference {diff}")
EOF
[ ${#failed[@]} -eq 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
