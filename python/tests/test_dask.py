"""cumulus.dask on a LocalCluster of CPU workers: exact tiled clustering, datasets file by file,
a worker killed mid-run, errors that name the tile or the file."""
import os

import numpy as np
import pytest

import cumulus
from conftest import GPU, SAMPLE

distributed = pytest.importorskip("distributed")
import cumulus.dask as cdask  # noqa: E402


def local(**kwargs):
    return cdask.local_cluster(gpus=0, n_workers=2, threads_per_worker=1, processes=True,
                               **kwargs)


@pytest.fixture(scope="module")
def client():
    with local() as cluster, distributed.Client(cluster) as c:
        yield c


def chain(steps=400):
    """A long line of points closer than the tolerance, crossing many tiles, beside scattered
    points: one cluster only an exact merge across tiles finds whole."""
    rng = np.random.default_rng(7)
    line = np.stack([np.arange(steps) * 0.3, np.arange(steps) * 0.2,
                     np.zeros(steps)], axis=1)
    noise = rng.uniform(0, 160, (3000, 3)) * np.array([1, 1, 0.05])
    return np.concatenate([line, noise]).astype(np.float32)


def test_tiles_merge_to_the_whole_clouds_labels(client, street):
    expected = cumulus.cluster(street, 0.5, 10, method="cpu")
    labels = cdask.cluster_tiled(client, street, 0.5, 10, method="cpu", tile_size=8.0)
    assert np.array_equal(labels, expected)


@pytest.mark.parametrize("transport", ["files", "tasks"])
def test_a_chain_across_many_tiles_stays_one_cluster(client, transport):
    pts = chain()
    expected = cumulus.cluster(pts, 0.5, method="cpu")
    labels = cdask.cluster_tiled(client, pts, 0.5, method="cpu", tile_size=5.0,
                                 transport=transport)
    assert np.array_equal(labels, expected)
    assert (labels == labels[0]).sum() >= 400


def test_the_scratch_files_are_removed_after_a_run(client, street, monkeypatch, tmp_path):
    made = []
    real = cdask._scratch_folder

    def spy(nbytes, base=None):
        made.append(real(nbytes, base))
        return made[-1]

    monkeypatch.setattr(cdask, "_scratch_folder", spy)
    cdask.cluster_tiled(client, street, 0.5, method="cpu", tile_size=20.0)
    cdask.cluster_tiled(client, street, 0.5, method="cpu", tile_size=20.0, scratch=str(tmp_path))
    assert len(made) == 2 and made[1].startswith(str(tmp_path))
    assert not any(os.path.exists(m) for m in made)


def test_in_process_tiles_give_the_same_labels(street):
    expected = cumulus.cluster(street, 0.5, 5, 1000, method="cpu")
    assert np.array_equal(
        cdask.cluster_tiled(None, street, 0.5, 5, 1000, method="cpu", tile_size=6.0), expected)


def test_tile_size_is_chosen_from_the_workers(client, street):
    edge = cdask.choose_tile_size(client, street, 0.5)
    assert edge >= 2.0
    labels = cdask.cluster_tiled(client, str(SAMPLE / "street_scene.pcd"), 0.5, 10, method="cpu")
    assert np.array_equal(labels, cumulus.cluster(street, 0.5, 10, method="cpu"))


def test_map_files_runs_each_file_on_the_workers(client, data):
    files = sorted((data / "kitti").glob("*.bin"))
    if not files:
        pytest.skip(f"no KITTI frames in {data}")
    results = cdask.map_files(client, files, "cluster", tolerance=0.5, min_size=10,
                              method="cpu")
    for path, labels in zip(files, results):
        assert np.array_equal(labels, cumulus.cluster(cumulus.read(str(path)), 0.5, 10,
                                                      method="cpu"))


def test_map_files_segments_depth_images(client):
    path = str(SAMPLE / "street_range.png")
    [r] = cdask.map_files(client, [path], "segment", depth_scale="kitti", epsilon=0.1,
                          method="cpu")
    local_result = cumulus.segment(cumulus.read(path, depth_scale="kitti"), 0.1, method="cpu")
    assert np.array_equal(r["rows"], local_result.rows)


def test_a_bad_file_is_named_in_the_error(client, tmp_path):
    bad = tmp_path / "broken.pcd"
    bad.write_text("not a pcd")
    with pytest.raises(cumulus.IoError, match="broken.pcd"):
        cdask.map_files(client, [str(bad)], "cluster", tolerance=0.5, method="cpu")


@pytest.mark.skipif(GPU, reason="needs a machine whose workers have no GPU")
def test_a_worker_without_its_gpu_fails_naming_the_tile(client, street):
    with pytest.raises(cumulus.GpuError, match=r"tile \d+ \(x \d+, y \d+; \d+ points\).*GPU"):
        cdask.cluster_tiled(client, street, 0.5, method="gpu", tile_size=20.0)


def test_a_worker_killed_mid_run_is_retried_with_the_same_result(tmp_path, street):
    marker = tmp_path / "killed"
    os.environ["CUMULUS_DASK_TEST_KILL_ONCE"] = str(marker)
    try:
        with local() as cluster, distributed.Client(cluster) as c:
            labels = cdask.cluster_tiled(c, street, 0.5, 10, method="cpu", tile_size=8.0)
    finally:
        del os.environ["CUMULUS_DASK_TEST_KILL_ONCE"]
    assert marker.exists(), "no worker was killed"
    assert np.array_equal(labels, cumulus.cluster(street, 0.5, 10, method="cpu"))


def test_bad_parameters_are_refused_before_anything_runs(client, street):
    with pytest.raises(cumulus.InvalidArgument, match="tolerance"):
        cdask.cluster_tiled(client, street, -1.0)
    with pytest.raises(ValueError, match="unknown task"):
        cdask.map_files(client, [], "explode")


def test_map_files_runs_whole_sequences_for_odometry(client, tmp_path):
    drives = []
    for seed in (1, 2):
        folder = tmp_path / f"drive{seed}"
        folder.mkdir()
        for frame in range(4):
            cloud, _ = cumulus.generate_street_frame(frame, frames=4, seed=seed)
            cumulus.write(str(folder / f"{frame:06d}.bin"), cloud)
        drives.append(str(folder))
    poses = cdask.map_files(client, drives, "odometry", method="cpu", filter_method="cpu")
    for folder, p in zip(drives, poses):
        assert np.array_equal(p, cumulus.odometry(folder, method="cpu", filter_method="cpu"))


def outside_address():
    """An address of this machine that is not loopback, or None."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
            ip = s.getsockname()[0]
        except OSError:
            return None
    return None if ip.startswith("127.") else ip


def test_a_default_local_run_listens_on_loopback_only(client):
    import socket
    from urllib.parse import urlparse

    info = client.scheduler_info()
    addresses = [info["address"], *info["workers"]]
    assert all(urlparse(a).hostname == "127.0.0.1" for a in addresses), addresses
    ip = outside_address()
    if ip is None:
        pytest.skip("this machine has no address besides loopback")
    for a in addresses:
        with socket.socket() as s:
            s.settimeout(2)
            assert s.connect_ex((ip, urlparse(a).port)) != 0, f"{a} answers on {ip}"


def test_tiles_run_over_tls_as_multi_host_runs_should(street):
    from distributed.security import Security

    security = Security.temporary()  # a throwaway certificate authority and key
    with local(protocol="tls://", security=security) as cluster, \
            distributed.Client(cluster, security=security) as c:
        assert c.scheduler.address.startswith("tls://")
        labels = cdask.cluster_tiled(c, street, 0.5, 10, method="cpu", tile_size=20.0)
    assert np.array_equal(labels, cumulus.cluster(street, 0.5, 10, method="cpu"))
