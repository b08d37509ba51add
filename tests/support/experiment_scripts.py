"""The scripts of experiments/ are not a package: a test loads one by its path, as `python experiments/...` runs it."""
import importlib.util
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def load_experiment(relative: str):
    """experiments/<relative> as a module (its `if __name__ == "__main__"` part does not run)."""
    path = EXPERIMENTS / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
