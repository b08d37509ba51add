"""Model sources that are not a plain folder: `pkg-parts:` (one GGUF file split over several wheels)."""
import sys

import pytest

from pipeline.composition.base_models import PARTS_FILE, ModelLoadError, resolve_model_path


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
