"""Calibrating code_xtok's CALM on DEV signals only: a training loop that follows the stage's recipe (AdamW, betas
0.9/0.99, linear warmup then cosine, clip 1.0, batches of `batch_size` random D_C rows cut into `micro_batches`
micro-batches of like length, the loss summed over the batch's answer tokens) and, every `--eval-every` steps,
scores bits per byte (pipeline.scoring.bits_per_byte, the stages' metric, context token <|endoftext|>) on
  dev_code    the reference solutions of the DEV slice (HumanEval 40-71 prompt + canonical solution, MBPP 51-90
              reference code): never the test items
  dev_prose   60 GSM8K train questions that neither english_train nor bpb_prose_test holds
  heldout_dc  48 stdlib functions of code_train that D_C (composition_train) does not hold: D_C's kind, unseen
  dev_answers the dev slice's reference answers GIVEN their prompts (HumanEval 40-71 bodies after the signature and
              docstring, MBPP 51-90 code after the 3-shot prompt): the benchmarks' task as asked, answer bytes only
  mbpp_train_answers  (once --dc mbpp-train wrote D_C's file) 40 of MBPP's train rows, answers given prompts
Step 0 is the anchor itself (W_O starts at zero): mB's figures come free with every run.

mA is frozen, so its states are computed once per row and reused (a cache keyed by the row's mA token ids; each
row run alone, as the right-padded batch computes it up to float summation order): a step then costs mB's
forward and backward and the cross-attention only. Not the stage (pipeline.train): the data order differs, and the
states are summed per row; for choices, not for the table.

    CALM_PARAMS=real/params.yaml CALM_THREADS=1 python experiments/table4_xtok/calibrate.py TAG \
        [--steps 200] [--lr 1e-3] [--warmup 0.05] [--connections 11:19,17:24,23:29] [--eval-every 50] \
        [--save]   # --save writes models/code_xtok/calm (a composition the dev_eval script loads)
    ... calibrate.py bases [--sets dev_answers,...]   # mA's and mB's bits per byte on the same texts (mA in its
                                                       # own tokenizer)
    ... --dc mbpp-train      # D_C = MBPP's train split (task_id 601-974) in the test prompts' layout, 0-shot
    ... --sets dev_answers   # score only these sets (the long prompts make every set costly)

Writes reports/code_xtok/calibration/<TAG>.json (its settings, the curve, seconds).
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import os
import random
import resource
import sys
import time
from pathlib import Path

import pipeline  # noqa: F401  (first: pins the float path)

WORLD = "code_xtok"
OUT = Path("reports") / WORLD / "calibration"
BPB = {"context_token": "<|endoftext|>"}
CAPTURED = [3, 7, 11, 15, 17, 19, 23]   # mA layers whose states are cached (23: after Qwen's final norm)


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def eval_sets() -> dict[str, list[dict]]:
    from pipeline.io import read_jsonl

    data = Path("data") / WORLD
    code = [{"prompt": "", "target": r["program_prefix"] + r["target"], "id": r["id"]}
            for s in ("cc_dev", "t2c_dev") for r in read_jsonl(data / f"{s}.jsonl")]
    used = {r["target"] for r in read_jsonl(data / "english_train.jsonl")}
    used |= {r["target"] for r in read_jsonl(data / "bpb_prose_test.jsonl")}
    pool = sorted({" ".join(json.loads(line)["question"].split())
                   for line in open("../shared/benchmarks/gsm8k/train.jsonl")} - used)
    pool = [q for q in pool if 40 <= len(q) <= 300]
    prose = [{"prompt": "", "target": q, "id": f"gsm8k-dev:{i}"} for i, q in
             enumerate(random.Random(1).sample(pool, 60))]
    dc_ids = {r["id"] for r in read_jsonl(data / "composition_train.jsonl")}
    rest = [r for r in read_jsonl(data / "code_train.jsonl") if r["id"] not in dc_ids and not r["prompt"]]
    held = [{"prompt": "", "target": r["target"], "id": r["id"]} for r in random.Random(2).sample(rest, 48)]
    # the benchmarks' task as asked: the dev slice's reference answers given their prompts (HumanEval: the body after
    # the signature and docstring; MBPP: the code after the 3-shot prompt), scored on the answer's bytes only
    answers = [{"prompt": r["prompt"], "target": r["target"], "id": r["id"]}
               for s in ("cc_dev", "t2c_dev") for r in read_jsonl(data / f"{s}.jsonl")]
    sets = {"dev_code": code, "dev_prose": prose, "heldout_dc": held, "dev_answers": answers}
    # D_C's kind when D_C is MBPP's train split: 40 of its rows, answers given prompts (--sets mbpp_train_answers)
    mbpp_train = data / f"{MBPP_TRAIN_STEM}.jsonl"
    if mbpp_train.exists():
        sets["mbpp_train_answers"] = random.Random(0).sample(read_jsonl(mbpp_train), 40)
    return sets


from pipeline.benchmarks.data import MBPP_TRAIN_IDS  # noqa: E402  (MBPP's train split: the split made for fine-tuning)
MBPP_TRAIN_STEM = "dc_mbpp_train"


def write_mbpp_train_dc(local_dir: str = "../shared/benchmarks/mbpp") -> str:
    """A D_C of MBPP's train split in the layout of the MBPP test prompts (0-shot: the task, its tests, [BEGIN]) ->
    the reference code and [DONE]; written to data/code_xtok/dc_mbpp_train.jsonl, its stem returned. No test or
    dev item is among them (test 11-510, the dev slice is test items)."""
    from pipeline.benchmarks import data as benchmark_data
    from pipeline.benchmarks.code_tasks import _mbpp_prompt_block, _normalise_newlines
    from pipeline.io import atomic_write_jsonl

    tasks = benchmark_data.load_mbpp(local_dir=local_dir, hub_id=None)
    rows = [{"prompt": _mbpp_prompt_block(tasks[i]), "target": _normalise_newlines(tasks[i]["code"]).strip("\n") +
             "\n[DONE]", "task": "t2c", "id": f"mbpp-train/{i}"} for i in MBPP_TRAIN_IDS]
    atomic_write_jsonl(Path("data") / WORLD / f"{MBPP_TRAIN_STEM}.jsonl", rows)
    return MBPP_TRAIN_STEM


def answer_bits_per_byte(model, tokenizer, rows) -> float:
    """Bits per byte of each row's target given its prompt: the text is tokenized whole and every token that holds a
    character of the target is scored (a token across the boundary, e.g. a newline merged with the body's indent,
    counts whole, for both tokenizers alike), over the target's UTF-8 bytes."""
    import torch

    start = tokenizer.convert_tokens_to_ids(BPB["context_token"])
    bits, n_bytes = 0.0, 0
    for r in rows:
        encoded = tokenizer(r["prompt"] + r["target"], add_special_tokens=False, return_offsets_mapping=True)
        ids, first = encoded["input_ids"], None
        first = next(i for i, (_, end) in enumerate(encoded["offset_mapping"]) if end > len(r["prompt"]))
        input_ids = torch.tensor([[start] + ids])
        with torch.no_grad():
            logits = model(input_ids=input_ids).logits[0, :-1].float()
        logp = torch.log_softmax(logits, -1).gather(1, input_ids[0, 1:, None])[:, 0]
        bits += float(-logp[first:].sum()) / math.log(2)
        n_bytes += len(r["target"].encode("utf-8"))
    return round(bits / n_bytes, 4)


def score(model, tokenizer, sets) -> dict:
    from pipeline.scoring import bits_per_byte

    out = {}
    for name, rows in sets.items():
        if name == "dev_answers":
            out[name] = answer_bits_per_byte(model, tokenizer, rows)
            continue
        summary, _ = bits_per_byte(model, tokenizer, rows, BPB)
        out[name] = summary["score"]
    return out


def bases(args) -> None:
    from pipeline.layout import model_dir, tokenizer_dir
    from pipeline.tokenization import load_tokenizer
    from pipeline.training.kinds import load_trained_model

    sets, result = eval_sets(), {}
    if args.sets:
        sets = {k: v for k, v in sets.items() if k in args.sets.split(",")}
    for name, tok_dir in (("mB", tokenizer_dir(WORLD)), ("mA", model_dir(WORLD, "mA"))):
        t0, c0 = time.time(), cpu_seconds()
        model = load_trained_model(model_dir(WORLD, name)).eval()
        result[name] = {**score(model, load_tokenizer(tok_dir), sets),
                        "wall_s": round(time.time() - t0, 1), "cpu_s": round(cpu_seconds() - c0, 1)}
        print(name, result[name], flush=True)
        del model
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"bases{'-' + args.sets.replace(',', '-') if args.sets else ''}.json").write_text(json.dumps(result, indent=1))


def cache_augmenting(model, donor: list | None = None) -> dict:
    """Replace model._run_augmenting (uncached calls only) by one that computes each row's mA states alone, once.
    donor (a one-element list, filled later with one row's cached states): every row then reads THOSE states,
    tiled to its length, in place of its own (mA reading an unrelated text: does the composition use mA at all?)."""
    import torch

    original, cache = model._run_augmenting, {}
    layouts = _record_pending_layouts() if model.config.read_pending else None

    def run(index, input_ids, attention_mask, position_ids, past_key_values, use_cache):
        if use_cache or past_key_values is not None:
            return original(index, input_ids, attention_mask, position_ids, past_key_values, use_cache)
        if layouts is not None:
            return None, pending_states(index, layouts[-1])
        if not isinstance(attention_mask, torch.Tensor):
            return original(index, input_ids, attention_mask, position_ids, past_key_values, use_cache)
        rows = []
        for b in range(input_ids.shape[0]):
            n = int(attention_mask[b].sum())
            assert bool(attention_mask[b, :n].all()), "right padding expected"
            key = (index, tuple(input_ids[b, :n].tolist()))
            if key not in cache:
                _, states = original(index, input_ids[b:b + 1, :n], torch.ones(1, n, dtype=attention_mask.dtype),
                                     torch.arange(n)[None], None, False)
                cache[key] = {layer: s[0].detach() for layer, s in states.items()}
            rows.append(cache[key] if not donor else {
                layer: d.repeat(n // d.shape[0] + 1, 1)[:n] for layer, d in donor[0].items()})
        width = input_ids.shape[1]
        out = {}
        for layer in rows[0]:
            t = rows[0][layer]
            full = torch.zeros(len(rows), width, t.shape[-1], dtype=t.dtype)
            for b, r in enumerate(rows):
                full[b, :r[layer].shape[0]] = r[layer]
            out[layer] = full
        return None, out

    def pending_states(index, layout):
        """read_pending: each row's slots (its committed tokens and its anchor tokens' tails, in the order the anchor's
        tokens make them; padding last) run alone, once."""
        rows = []
        for b in range(layout.ids.shape[0]):
            n = int(layout.real[b].sum())
            alone = {name: getattr(layout, name)[b:b + 1, :n] for name in ("ids", "real", "ordinal", "committed")}
            alone["ancestors"] = layout.ancestors[b:b + 1, :n, :n]
            key = (index, "pending", tuple(alone["ids"][0].tolist()), tuple(alone["ordinal"][0].tolist()),
                   hashlib.md5(alone["ancestors"].numpy().tobytes()).hexdigest())  # the paths (saved: no hash())
            if key not in cache:
                _, states = original(index, alone["ids"], model._pending_masks(index, alone, None), alone["ordinal"],
                                     None, False)
                cache[key] = {layer: st[0].detach() for layer, st in states.items()}
            rows.append((n, cache[key] if not donor else {
                layer: d.repeat(n // d.shape[0] + 1, 1)[:n] for layer, d in donor[0].items()}))
        out = {}
        for layer in rows[0][1]:
            full = torch.zeros(len(rows), layout.ids.shape[1], rows[0][1][layer].shape[-1])
            for b, (n, r) in enumerate(rows):
                full[b, :n] = r[layer]
            out[layer] = full
        return out

    model._run_augmenting = run
    return cache


def _record_pending_layouts() -> list:
    """The layouts the composition builds (read_pending), the last one last: the cached run needs each row's slots."""
    import pipeline.composition.keys_values as keys_values

    seen, build = [], keys_values.pending_layout

    def record(*args, **kwargs):
        layout = build(*args, **kwargs)
        seen[:] = [layout]
        return layout

    keys_values.pending_layout = record
    return seen


def train(args) -> None:
    import torch
    from transformers import get_cosine_schedule_with_warmup

    from pipeline.params import load_params
    from pipeline.training.kinds import Stage, get_kind
    from pipeline.training.trainer import set_threads

    params = load_params()
    set_threads(params.get("runtime") or {})
    cfg = copy.deepcopy(params["worlds"][WORLD]["models"]["calm"])
    comp = cfg.setdefault("composition", {})
    if args.connections:
        comp["connections"] = [[[int(x) for x in pair.split(":")] for pair in args.connections.split(",")]]
    if args.final_norm is not None:
        comp["final_norm"] = bool(args.final_norm)
    if args.read_pending:
        comp["read_pending"] = True
    if args.recency_bias:
        comp["recency_bias"] = True
    if args.lexical_start:
        strength, slope = (float(x) for x in args.lexical_start.split(":"))
        comp["lexical_start"] = {"strength": strength, "slope": slope}
    if args.dc:  # another D_C: data/code_xtok/<stem>.jsonl (rows of prompt, target), or MBPP's train split; with
        # commas, several files mixed as the stage mixes a data list (e.g. composition_train,english_train: replay)
        stems = [write_mbpp_train_dc() if stem == "mbpp-train" else stem for stem in args.dc.split(",")]
        cfg["data"] = stems[0] if len(stems) == 1 else stems
    tcfg = cfg["train"]
    tcfg.update(steps=args.steps, lr=args.lr, warmup_ratio=args.warmup)
    micro = int(params["worlds"][WORLD].get("micro_batches", 1))
    batch = int(tcfg["batch_size"])
    t_start, c_start = time.time(), cpu_seconds()
    stage = Stage(params, WORLD, "calm", cfg)
    kind = get_kind("composition")
    tokenizer = stage.tokenizer()
    model, counts = kind.build(stage, tokenizer)
    dataset, collator, _ = kind.dataset(stage, tokenizer)
    donor = []
    cache = cache_augmenting(model, donor)
    # mA states of a superset of layers are cached (every 4th layer, the paper's default, and 17), so that runs with
    # other connections reuse them: extra capture hooks, as the composition registers its own
    connected = {a for a, _ in comp["connections"][0]}
    if not connected <= set(CAPTURED) or 23 not in connected or not comp.get("final_norm"):
        raise SystemExit(f"connections outside the cached layers {CAPTURED} (layer 23 read after the final norm)")
    for i in sorted(set(CAPTURED) - connected):
        model._augmenting_layers[0][i].register_forward_hook(model._capture_hook(0, i))
    cache_file = Path("models/.calibration") / ("mA-states-" + "-".join(map(str, CAPTURED))
                                                + ("-pending-paths" if args.read_pending else "") + ".pt")
    if cache_file.exists():
        cache.update(torch.load(cache_file))
        print("loaded", len(cache), "cached mA rows from", cache_file, flush=True)
    n_cached = len(cache)
    sets = eval_sets()
    if args.sets:
        sets = {k: v for k, v in sets.items() if k in args.sets.split(",")}
    setup = {"wall_s": round(time.time() - t_start, 1), "cpu_s": round(cpu_seconds() - c_start, 1)}
    print("setup", setup, counts, flush=True)
    trainable = [p for p in model.parameters() if p.requires_grad]
    torch.manual_seed(args.seed)
    optimizer = torch.optim.AdamW(trainable, lr=tcfg["lr"], betas=(0.9, tcfg.get("adam_beta2", 0.99)),
                                  weight_decay=tcfg.get("weight_decay", 0.0), eps=1e-8)
    scheduler = get_cosine_schedule_with_warmup(optimizer, int(tcfg["warmup_ratio"] * args.steps), args.steps)
    rng = random.Random(args.seed)
    order: list[int] = []
    record = {"tag": args.tag, "settings": {"dc": cfg["data"], "connections": comp.get("connections"), "final_norm": comp.get("final_norm"),
              "read_pending": bool(comp.get("read_pending")), "recency_bias": bool(comp.get("recency_bias")),
              "lexical_start": comp.get("lexical_start"),
              "steps": args.steps, "lr": tcfg["lr"], "warmup_ratio": tcfg["warmup_ratio"], "batch_size": batch,
              "micro_batches": micro, "seed": args.seed}, "counts": counts, "setup": setup, "curve": [], "train_loss": []}
    OUT.mkdir(parents=True, exist_ok=True)

    saved = [n_cached]
    if args.eval_step is not None:  # evaluate this run's bridges saved at that step, then stop
        model.load_composition_state(torch.load(cache_file.parent / f"{args.tag}-step{args.eval_step}.pt"))
        if args.ablate:
            dc = list(cache.values())
            donor.append(max(dc, key=lambda r: next(iter(r.values())).shape[0]))
        model.eval()
        figures = score(model, tokenizer, sets)
        point = {"step": args.eval_step, "ablate_mA": args.ablate, **figures,
                 "wall_s": round(time.time() - t_start, 1), "cpu_s": round(cpu_seconds() - c_start, 1)}
        print("eval", json.dumps(point), flush=True)
        (OUT / f"{args.tag}-step{args.eval_step}{'-ablated' if args.ablate else ''}.json").write_text(json.dumps(point))
        return

    def evaluate(step, window):
        t0, c0 = time.time(), cpu_seconds()
        model.eval()
        figures = score(model, tokenizer, sets)
        model.train()
        if len(cache) > saved[0] + 100:  # the mA states, for the next run with these mA layers
            cache_file.parent.mkdir(parents=True, exist_ok=True)
            torch.save(dict(cache), cache_file)
            saved[0] = len(cache)
        if step:
            torch.save(model.composition_state_dict(), cache_file.parent / f"{args.tag}-step{step}.pt")
        point = {"step": step, **figures, "train_loss_window": window,
                 "eval_wall_s": round(time.time() - t0, 1), "eval_cpu_s": round(cpu_seconds() - c0, 1),
                 "wall_s": round(time.time() - t_start, 1), "cpu_s": round(cpu_seconds() - c_start, 1)}
        record["curve"].append(point)
        print("eval", json.dumps(point), flush=True)
        (OUT / f"{args.tag}.json").write_text(json.dumps(record, indent=1))

    if not args.skip_step0:
        evaluate(0, None)
    model.train()
    window: list[float] = []
    for step in range(1, args.steps + 1):
        t0 = time.time()
        if len(order) < batch:
            perm = list(range(len(dataset)))
            rng.shuffle(perm)
            order += perm
        ids, order = order[:batch], order[batch:]
        rows = sorted((dataset[i] for i in ids), key=lambda r: len(r["input_ids"]))
        n_answer = sum(sum(1 for x in r["labels"][1:] if x != -100) for r in rows)
        total = 0.0
        size = batch // micro
        for m in range(micro):
            inputs = collator(rows[m * size:(m + 1) * size])
            labels = inputs.pop("labels")
            logits = model(**inputs).logits[:, :-1].float()
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                                                     ignore_index=-100, reduction="sum") / n_answer
            loss.backward()
            total += float(loss.detach())
        norm = torch.nn.utils.clip_grad_norm_(trainable, tcfg.get("max_grad_norm", 1.0))
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        window.append(total)
        record["train_loss"].append(round(total, 4))
        if step % 5 == 0:
            print(f"step {step} loss {sum(window[-5:]) / 5:.4f} grad_norm {float(norm):.3f} "
                  f"lr {scheduler.get_last_lr()[0]:.2e} {time.time() - t0:.1f}s cached {len(cache)}", flush=True)
        if step % args.eval_every == 0 or step == args.steps:
            evaluate(step, round(sum(window) / len(window), 4))
            window = []
    if args.save_step is not None:
        model.load_composition_state(torch.load(cache_file.parent / f"{args.tag}-step{args.save_step}.pt"))
    if args.save or args.save_step is not None:
        from pipeline.layout import model_dir
        from pipeline.tokenization import save_tokenizer
        from pipeline.training.kinds import KIND_FILE

        directory = model_dir(WORLD, "calm")
        directory.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(directory))
        save_tokenizer(tokenizer, directory)
        (directory / KIND_FILE).write_text("composition\n")
        (directory / "train_info.json").write_text(json.dumps({"calibration": record["settings"]}))
        print("saved", directory)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("tag")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=float, default=0.05)
    p.add_argument("--connections", default=None)
    p.add_argument("--final-norm", type=int, default=None)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--read-pending", action="store_true", help="the composition also reads mA's tails (read_pending)")
    p.add_argument("--recency-bias", action="store_true", help="ALiBi bias in the cross-attention (recency_bias)")
    p.add_argument("--lexical-start", default=None, metavar="STRENGTH:SLOPE",
                   help="the deepest connection starts from the map between the output embeddings (lexical_start)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dc", default=None, help="D_C: a file stem in data/code_xtok/, or mbpp-train (MBPP's train split in the test prompts' layout, "
                   "0-shot; written to data/code_xtok/dc_mbpp_train.jsonl); several, comma-separated, are mixed as the stage mixes a "
                   "data list (composition_train,english_train: English replay); default: the world's D_C")
    p.add_argument("--sets", default=None, help="only these dev sets (comma-separated)")
    p.add_argument("--skip-step0", action="store_true")
    p.add_argument("--save", action="store_true")
    p.add_argument("--eval-step", type=int, default=None, help="only evaluate this run's bridges saved at that step")
    p.add_argument("--ablate", action="store_true", help="with --eval-step: every text reads one unrelated text's "
                   "mA states (the longest cached), tiled to its length")
    p.add_argument("--save-step", type=int, default=None, help="with --steps 0: write models/code_xtok/calm from "
                   "this run's bridges saved at that step")
    args = p.parse_args()
    os.environ.setdefault("CALM_PARAMS", "real/params.yaml")
    if args.tag == "bases":
        bases(args)
    else:
        train(args)


if __name__ == "__main__":
    sys.exit(main())
