"""read() and write(): clouds with their fields and origin, depth images, errors."""
import pickle

import numpy as np
import pytest

import cumulus
from conftest import ROOT, SAMPLE, data_file


def test_read_kitti_gives_points_and_intensity(kitti):
    assert len(kitti) == 124668
    assert kitti.points.dtype == np.float64 and kitti.points.shape == (124668, 3)
    assert kitti.fields["intensity"].shape == (124668,)
    assert np.array_equal(kitti.points, kitti.local_points.astype(np.float64))


def test_local_points_are_a_read_only_view(street):
    view = street.local_points
    assert view.dtype == np.float32 and not view.flags.writeable
    with pytest.raises(ValueError):
        view[0, 0] = 1


def test_large_world_coordinates_get_a_local_origin_and_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    world = rng.uniform(0, 100, (1000, 3)) + np.array([500000.0, 5400000.0, 300.0])
    cloud = cumulus.Cloud(world, intensity=rng.uniform(0, 1, 1000).astype(np.float32))
    assert cloud.origin != (0.0, 0.0, 0.0)
    assert np.abs(cloud.points - world).max() < 1e-3
    path = tmp_path / "utm.pcd"
    cumulus.write(str(path), cloud)
    again = cumulus.read(str(path))
    assert np.abs(again.points - world).max() < 1e-3
    assert np.array_equal(again.fields["intensity"], cloud.fields["intensity"])


@pytest.mark.parametrize("name", ["a.pcd", "a.ply", "a.xyz"])
def test_write_then_read_keeps_the_points(tmp_path, street, name):
    path = tmp_path / name
    cumulus.write(str(path), street)
    again = cumulus.read(str(path))
    assert np.abs(again.points - street.points).max() < 1e-4


def test_write_takes_a_plain_array(tmp_path):
    pts = np.arange(30, dtype=np.float32).reshape(10, 3)
    cumulus.write(str(tmp_path / "p.pcd"), pts, encoding="ascii")
    assert np.array_equal(cumulus.read(str(tmp_path / "p.pcd")).local_points, pts)


def test_depth_image_needs_a_scale_and_reads_with_one():
    path = str(SAMPLE / "street_range.png")
    with pytest.raises(cumulus.InvalidArgument, match="depth_scale"):
        cumulus.read(path)
    image = cumulus.read(path, depth_scale="kitti")
    assert isinstance(image, cumulus.DepthImage)
    assert image.depth.shape == (image.height, image.width)


def test_depth_image_round_trips_through_png(tmp_path):
    depth = np.zeros((8, 5), dtype=np.float32)
    depth[2:6, 1:4] = 2.5
    cumulus.write(str(tmp_path / "d.png"), depth, depth_scale=0.001)
    again = cumulus.read(str(tmp_path / "d.png"), depth_scale=0.001)
    assert np.allclose(again.depth, depth)


def test_missing_and_corrupt_files_raise_io_errors(tmp_path):
    with pytest.raises(cumulus.IoError, match="nope.pcd"):
        cumulus.read(str(tmp_path / "nope.pcd"))
    bad = tmp_path / "bad.pcd"
    bad.write_bytes(b"VERSION .7\nFIELDS x y z\nSIZE 4 4\n")
    with pytest.raises(OSError):
        cumulus.read(str(bad))


def test_a_refused_write_leaves_the_old_file(tmp_path, street):
    path = tmp_path / "keep.bin"
    cumulus.write(str(path), street)
    before = path.read_bytes()
    # .bin holds float32 world coordinates: these would move by decimetres.
    far = np.array([[500000.37, 5400000.11, 0], [500010, 5400010, 1]], dtype=np.float64)
    with pytest.raises(cumulus.IoError, match="keep.bin"):
        cumulus.write(str(path), far)
    with pytest.raises(cumulus.InvalidArgument):
        cumulus.write(str(path), street, encoding="zip")
    assert path.read_bytes() == before


def test_float64_points_that_float32_cannot_hold_are_refused():
    with pytest.raises(cumulus.InvalidArgument, match="float32"):
        cumulus.Cloud(np.array([[1e9 + 0.37, 0.11, 0], [0, 0, 0]]))


def test_clouds_pickle_with_their_fields(data):
    cloud = cumulus.read(data_file(data, "pcl/table_scene_mug_stereo_textured.pcd"))
    again = pickle.loads(pickle.dumps(cloud))
    assert (again.width, again.height, again.origin) == (cloud.width, cloud.height, cloud.origin)
    assert np.array_equal(again.local_points, cloud.local_points, equal_nan=True)
    assert again.fields.keys() == cloud.fields.keys()
    for name, values in cloud.fields.items():
        assert np.array_equal(again.fields[name], values, equal_nan=True), name


def test_las_round_trip_keeps_every_field_and_the_metadata(tmp_path, street):
    path = str(tmp_path / "street.las")
    cumulus.write(path, street)
    again = cumulus.read(path)
    assert np.abs(again.points - street.points).max() <= 0.0005 + 1e-5  # LAS's 1 mm grid
    for name in ("intensity", "ring", "semantic"):
        assert np.array_equal(again.fields[name], street.fields[name]), name
    assert again.metadata["las.version"] == b"1.4"
    assert again.metadata["las.point_format"] == b"6"
    unpickled = pickle.loads(pickle.dumps(again))
    assert unpickled.metadata == again.metadata


def test_las_standard_fields_are_float64_and_gps_time_is_exact():
    cloud = cumulus.read(str(ROOT / "fuzz" / "seeds" / "las" / "format3.las"))
    gps = cloud.fields["gps_time"]
    assert gps.dtype == np.float64
    assert list(gps) == [1e6, 1e6 + 1, 1e6 + 2, 1e6 + 3]
    assert list(cloud.fields["classification"]) == [2, 2, 2, 2]
    assert np.allclose(cloud.points[1], [500001.0, 3999999.5, 0.1])
    assert cloud.metadata["las.vlr.0"][2:17] == b"LASF_Projection"


def test_las_labels_go_where_asked(tmp_path):
    pts = np.arange(30, dtype=np.float32).reshape(10, 3)
    labels = np.array([-1, 0, 1, 2, 0, 1, 2, 0, 1, -1], dtype=np.int32)
    cloud = cumulus.Cloud(pts, labels=labels)
    path = str(tmp_path / "labels.las")
    cumulus.write(path, cloud)
    assert np.array_equal(cumulus.read(path).fields["labels"], labels)
    cumulus.write(path, cloud, las_labels="classification")
    assert list(cumulus.read(path).fields["classification"]) == [1 if l < 0 else 64 + l for l in labels]
    with pytest.raises(cumulus.InvalidArgument, match="las_labels"):
        cumulus.write(path, cloud, las_labels="colour")


def test_laz_says_how_to_convert(tmp_path):
    path = tmp_path / "scan.laz"
    path.write_bytes(b"LASF")
    with pytest.raises(cumulus.IoError, match="laszip"):
        cumulus.read(str(path))
