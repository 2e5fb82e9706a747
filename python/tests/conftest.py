"""Shared fixtures: the real data (skipped with a message when absent), the sample scene, the
CLI to compare with, and whether a GPU can be used."""
import json
import os
import subprocess
from pathlib import Path

import pytest

import cumulus

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = Path(os.environ.get("CUMULUS_SAMPLE_DIR", ROOT / "sample_data"))
GPU = any(d["available"] for d in cumulus.devices())
needs_gpu = pytest.mark.skipif(
    not GPU, reason="no usable GPU: " + cumulus.devices()[0].get("reason", ""))


def data_dir():
    for d in (os.environ.get("CUMULUS_DATA"), os.environ.get("CUMULUS_SHARED_DATA"),
              ROOT.parent / "shared" / "data"):
        if d and Path(d).is_dir():
            return Path(d)
    return None


@pytest.fixture
def data():
    d = data_dir()
    if d is None:
        pytest.skip("real data not found (../shared/data or $CUMULUS_DATA)")
    return d


def data_file(data, relative):
    """A file of the real data, or a skip saying which is missing."""
    path = data / relative
    if not path.is_file():
        pytest.skip(f"{relative} not found in {data}")
    return str(path)


@pytest.fixture
def kitti(data):
    return cumulus.read(data_file(data, "kitti/000000.bin"))


@pytest.fixture(scope="session")
def street():
    return cumulus.read(str(SAMPLE / "street_scene.pcd"))


def cli_path():
    """The CLI to compare with, or a skip where it was not carried."""
    cli = os.environ.get("CUMULUS_CLI", str(ROOT / "build" / "app" / "cli" / "cumulus-cli"))
    if not Path(cli).is_file():
        pytest.skip(f"cumulus-cli not found at {cli} (set CUMULUS_CLI)")
    return cli


def cli_json(*args):
    """`cumulus-cli ARGS --json`'s output."""
    out = subprocess.run([cli_path(), *map(str, args), "--json"], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)
