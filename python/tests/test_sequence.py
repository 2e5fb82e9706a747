"""Generated drives and odometry from Python give what the CLI gives."""
import subprocess

import numpy as np
import pytest

import cumulus
from conftest import cli_path

FRAMES = 8


@pytest.fixture(scope="module")
def drive(tmp_path_factory):
    """A short generated drive written by the CLI (velodyne/*.bin and poses.txt)."""
    folder = tmp_path_factory.mktemp("drive")
    subprocess.run([cli_path(), "generate", "sequence", "--out", str(folder), "--frames",
                    str(FRAMES), "--beams", "16", "--azimuth-steps", "512"], check=True,
                   capture_output=True)
    return folder


def test_generated_frames_equal_the_clis(drive):
    truth = np.loadtxt(drive / "poses.txt").reshape(-1, 3, 4)
    for frame in (0, FRAMES - 1):
        cloud, pose = cumulus.generate_street_frame(frame, frames=FRAMES)
        assert len(cloud) > 0
        assert np.allclose(pose[:3], truth[frame], atol=1e-9)
    ours, _ = cumulus.generate_street_frame(3, frames=FRAMES)
    again, _ = cumulus.generate_street_frame(3, frames=FRAMES)
    assert np.array_equal(ours.local_points, again.local_points)


def test_generated_frames_label_their_trees():
    cloud, _ = cumulus.generate_street_frame(0, frames=2)
    classes = set(np.unique(cloud.fields["semantic"]).astype(int).tolist())
    assert classes == {1, 2, 3, 4, 5, 6}  # ground ... pedestrian, vegetation
    bare, _ = cumulus.generate_street_frame(0, frames=2, vegetation=False)
    assert 6 not in set(np.unique(bare.fields["semantic"]).astype(int).tolist())


def test_odometry_gives_the_clis_poses(drive, tmp_path):
    files = cumulus.sequence_frames(str(drive / "velodyne"))
    assert len(files) == FRAMES and files == sorted(files)
    poses = cumulus.odometry(str(drive / "velodyne"), method="cpu", filter_method="cpu")
    assert poses.shape == (FRAMES, 4, 4) and np.array_equal(poses[0], np.eye(4))
    out = tmp_path / "poses.txt"
    subprocess.run([cli_path(), "sequence", str(drive / "velodyne"), "--task", "odometry",
                    "--method", "cpu", "--poses", str(out)], check=True, capture_output=True)
    cli = np.loadtxt(out).reshape(-1, 3, 4)
    assert np.allclose(poses[:, :3], cli, atol=1e-9)


def test_odometry_step_by_step_reports_each_scan(drive):
    o = cumulus.Odometry(method="cpu", filter_method="cpu")
    files = cumulus.sequence_frames(str(drive / "velodyne"))
    steps = [o.add(cumulus.read(f)) for f in files[:3]]
    assert steps[1]["correspondences"] > 0 and steps[1]["pose"].shape == (4, 4)
    assert o.poses.shape == (3, 4, 4)


def test_bad_odometry_parameters_are_refused():
    with pytest.raises(cumulus.InvalidArgument, match="voxel"):
        cumulus.Odometry(voxel=0)
    with pytest.raises(cumulus.InvalidArgument, match="scan-to-map"):
        cumulus.Odometry(target="sideways")
    with pytest.raises(cumulus.InvalidArgument, match="frame"):
        cumulus.generate_street_frame(5, frames=5)
