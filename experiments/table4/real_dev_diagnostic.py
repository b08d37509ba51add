"""The code_real world's models on its dev splits, which are in D_C's task formats (synthesized functions in the
dialect: cc_dev in HumanEval's layout, t2c_dev MBPP-like with one assert; docs/table4-real-log.md): does the
composition read mA's dialect where the format is the one it trained on? A diagnostic beside Table 4's test
subsets, not a figure of the table.

    python experiments/table4/real_dev_diagnostic.py mB calm [more models]   # in a checkout that built code_real
"""
import json
import sys
from pathlib import Path

from pipeline.evaluate import evaluate_sets
from pipeline.io import read_jsonl
from pipeline.params import load_params
from pipeline.layout import model_dir, tokenizer_dir
from pipeline.tokenization import load_tokenizer
from pipeline.training.kinds import load_trained_model
from pipeline.training.trainer import set_threads

WORLD = "code_real"
SETS = {"cc_dev": {"metric": "pass_at_k", "stop": ["\n\n"], "max_new_tokens": 160},
        "t2c_dev": {"metric": "pass_at_k", "stop": ["\n\n"], "max_new_tokens": 220}}


def main(models: list[str]) -> None:
    params = load_params()
    set_threads(params.get("runtime") or {})
    tokenizer = load_tokenizer(tokenizer_dir(WORLD))
    sets = {s: read_jsonl(Path("data") / WORLD / f"{s}.jsonl") for s in SETS}
    out = {}
    for name in models:
        model = load_trained_model(model_dir(WORLD, name)).eval()
        metrics, _ = evaluate_sets(model, tokenizer, sets, {"sets": SETS, "batch_size": 10, "max_new_tokens": 160},
                                   progress=False)
        out[name] = {s: m["score"] for s, m in metrics.items()}
        print(name, out[name], flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
