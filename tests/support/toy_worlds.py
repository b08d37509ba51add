"""conf/ with a test world added: the toy worlds (tests/support/toy_*_world.yaml) are not in conf/, so a test that
composes one copies conf/ and drops the world's file into conf/world/."""
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def conf_with_world(tmp_path_factory, world_file: str, name: str) -> Path:
    conf = tmp_path_factory.mktemp("conf") / "conf"
    shutil.copytree(ROOT / "conf", conf)
    shutil.copy(ROOT / "tests" / "support" / world_file, conf / "world" / f"{name}.yaml")
    return conf
