"""Does a cross-tokenizer composition read mA's content, or only use its bridges as an adapter of mB? Teacher-forced
bits per target byte on DEV rows (prompt -> target), three ways:
  calm     the composition as it is
  swapped  the same composition, each row reading the mA states of ANOTHER row of its group (languages_xtok: the
           same language, so the same two exemplars, another source sentence), slot for slot
  mB       the anchor alone
If calm ~= swapped, what mA read of this row's source does not reach mB's predictions. Never on test rows.

    CALM_PARAMS=real/params.yaml python experiments/table2_xtok/reads_mA.py models/languages_xtok/calm \
        [--set flores_dev] [--per-group 3]
"""
from __future__ import annotations

import argparse
import json
import math
from contextlib import contextmanager

import pipeline  # noqa: F401  (first: pins the float path)
import torch


@contextmanager
def reading_other_rows(calm):
    """Inside: row b of a batch reads the mA states of row b+1 (cyclically), in the slots it would read its own
    (padding slots of the other row read as zero). Cacheless forwards only."""
    original = calm._run_augmenting

    def run(index, input_ids, attention_mask, position_ids, past_key_values, use_cache):
        cache, states = original(index, input_ids, attention_mask, position_ids, past_key_values, use_cache)
        return cache, {layer: torch.roll(value, shifts=-1, dims=0) for layer, value in states.items()}

    calm._run_augmenting = run
    try:
        yield
    finally:
        calm._run_augmenting = original


def answer_bits(calm, rows: list[dict], swapped: bool = False, anchor_alone: bool = False) -> tuple[float, int]:
    """Summed -log2 p of each row's target tokens given its prompt (the anchor's tokens of prompt + target), and the
    targets' UTF-8 bytes. One batch: the rows are read together (swapping needs at least two)."""
    tokenizer = calm.processor.anchor_tokenizer
    encoded = [tokenizer(r["prompt"] + r["target"])["input_ids"] for r in rows]
    prompt_lengths = [len(tokenizer(r["prompt"])["input_ids"]) for r in rows]
    width = max(map(len, encoded))
    ids = torch.full((len(rows), width), calm.processor.anchor_pad_id)
    mask = torch.zeros_like(ids)
    for b, tokens in enumerate(encoded):
        ids[b, : len(tokens)] = torch.tensor(tokens)
        mask[b, : len(tokens)] = 1
    labels = ids.masked_fill(mask == 0, -100)
    for b, n in enumerate(prompt_lengths):
        labels[b, :n] = -100
    with torch.no_grad():
        if anchor_alone:
            logits = calm.anchor(input_ids=ids, attention_mask=mask,
                                 position_ids=(mask.cumsum(-1) - 1).clamp(min=0)).logits
        elif swapped:
            with reading_other_rows(calm):
                logits = calm(input_ids=ids, attention_mask=mask).logits
        else:
            logits = calm(input_ids=ids, attention_mask=mask).logits
    log_probs = torch.log_softmax(logits[:, :-1].float(), -1)
    targets = labels[:, 1:]
    picked = log_probs.gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    nats = -(picked * (targets != -100)).sum().item()
    return nats / math.log(2), sum(len(r["target"].encode()) for r in rows)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a saved cross-tokenizer composition (models/<world>/<name>)")
    parser.add_argument("--set", default="flores_dev", help="a DEV split of data/languages_xtok/ (default flores_dev)")
    parser.add_argument("--per-group", type=int, default=3, help="rows per group (language)")
    args = parser.parse_args(argv)
    from pipeline.errors import UserError
    from pipeline.io import read_jsonl
    from pipeline.training.kinds import load_trained_model

    if "test" in args.set:
        raise UserError(f"{args.set}: a test split; this diagnostic reads DEV rows only")
    calm = load_trained_model(args.model).eval()
    if getattr(calm, "processor", None) is None:
        raise UserError(f"{args.model} is not a cross-tokenizer composition")
    groups: dict[str, list[dict]] = {}
    for row in read_jsonl(f"data/languages_xtok/{args.set}.jsonl"):
        group = groups.setdefault(row.get("group", "all"), [])
        if len(group) < args.per_group:
            group.append({"prompt": row["prompt"], "target": " " + row["target"].strip()})
    totals = {"calm": [0.0, 0], "swapped": [0.0, 0], "mB": [0.0, 0]}
    own_helps = 0   # languages where reading the row's own source gives fewer bits than another row's
    for name, rows in groups.items():
        if len(rows) < 2:
            continue
        bits_of = {}
        for key, kw in (("calm", {}), ("swapped", {"swapped": True}), ("mB", {"anchor_alone": True})):
            bits_of[key], size = answer_bits(calm, rows, **kw)
            totals[key][0] += bits_of[key]
            totals[key][1] += size
        own_helps += bits_of["calm"] < bits_of["swapped"]
    print(json.dumps({key: round(bits / size, 4) for key, (bits, size) in totals.items()}
                     | {"groups": len(groups), "own_below_swapped": own_helps}))


if __name__ == "__main__":
    from pipeline.cli import cli

    cli(main)()
