"""Which torch CPU ops give the same bytes on two machines, on each float path (pipeline/float_path.py).

Runs a fixed set of ops (matrix products, reductions, the element-wise functions and attention a training step
uses, a backward pass and an AdamW step) on inputs built from integers, so that they are the same bytes on any
machine, once per float path in a fresh process (the path is chosen before torch loads), and writes the md5 of
each op's output. Run it on two machines, then compare:

    python launch/float_ops.py here.json                      # on each machine
    python launch/float_ops.py there.json --compare here.json # prints, per path, the ops whose bytes differ

A path on which no op differs is one on which the two machines train the same models, given the same threads.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys

from pipeline import float_path

THREADS = 2  # the published runtime's: MKL's sums depend on the thread count too


def run_ops() -> dict:
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(THREADS)

    def grid(*shape: int, salt: int = 1) -> torch.Tensor:
        n = 1
        for s in shape:
            n *= s
        i = torch.arange(n, dtype=torch.int64)
        return (((i * 2654435761 + salt * 97) % 2003).to(torch.float32) / 1001.5 - 1.0).reshape(shape)

    a, w, bias, big = grid(64, 48), grid(96, 48, salt=3), grid(96, salt=4), grid(4096, 257, salt=8)
    q, k, v = (grid(2, 4, 33, 16, salt=s) for s in (5, 6, 7))
    out = {
        "matmul 64x48x96": a @ grid(48, 96, salt=2),
        "matmul 300x512x300": grid(300, 512, salt=9) @ grid(512, 300, salt=10),
        "bmm": torch.bmm(grid(8, 33, 48, salt=11), grid(8, 48, 40, salt=12)),
        "linear": F.linear(a, w, bias),
        "sum": big.sum(-1),
        "mean": big.mean(0),
        "softmax": big.softmax(-1),
        "log_softmax": big.log_softmax(-1),
        "exp": big.exp(),
        "tanh": big.tanh(),
        "gelu": F.gelu(big),
        "silu": F.silu(big),
        "rsqrt": (big.abs() + 0.1).rsqrt(),
        "layer_norm": F.layer_norm(big, (257,)),
        "attention": F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "cross_entropy": F.cross_entropy(grid(100, 44, salt=13), torch.arange(100) % 44),
    }
    layer = torch.nn.Linear(48, 96)
    with torch.no_grad():
        layer.weight.copy_(w)
        layer.bias.copy_(bias)
    torch.tanh(layer(a)).pow(2).sum().backward()
    out["backward"] = layer.weight.grad.clone()
    torch.optim.AdamW(layer.parameters(), lr=1e-3).step()
    out["adamw step"] = layer.weight.detach()
    digests = {name: hashlib.md5(t.detach().contiguous().numpy().tobytes()).hexdigest()[:12] for name, t in out.items()}
    return {"capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__, "ops": digests}


def on_path(path: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in float_path.VARIABLES}
    out = subprocess.run([sys.executable, __file__, "--child"], env={**env, float_path.ENV: path},
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"error: the ops on the {path} path failed: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(out.stdout)


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "?")
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", nargs="?", help="where to write this machine's digests (JSON)")
    parser.add_argument("--compare", metavar="JSON", help="another machine's output: print the ops that differ")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_ops()))
        return
    if not args.output:
        parser.error("name the JSON file to write")
    here = {"cpu": cpu_name(), "paths": {path: on_path(path) for path in float_path.PATHS}}
    with open(args.output, "w") as f:
        json.dump(here, f, indent=1)
    print(f"{here['cpu']}: digests of {len(next(iter(here['paths'].values()))['ops'])} ops on "
          f"{len(here['paths'])} float paths written to {args.output}")
    if args.compare:
        try:
            with open(args.compare) as f:
                there = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"error: cannot read {args.compare}: {e}")
        print(f"against {there.get('cpu', '?')}:")
        for path, mine in here["paths"].items():
            theirs = there.get("paths", {}).get(path)
            if theirs is None:
                print(f"  {path:9s} not in {args.compare}")
                continue
            differ = [op for op, digest in mine["ops"].items() if theirs["ops"].get(op) != digest]
            print(f"  {path:9s} " + (f"{len(differ)} differ: {', '.join(differ)}" if differ else "every op the same"))


if __name__ == "__main__":
    main()
