"""The algorithms from Python give what the backend and the CLI give."""
import threading

import numpy as np
import pytest

import cumulus
from conftest import GPU, SAMPLE, cli_json, needs_gpu


def test_cluster_gives_the_clis_clusters(street):
    labels = cumulus.cluster(street, 0.5, 10, method="cpu")
    expected = cli_json("cluster", SAMPLE / "street_scene.pcd", "--tolerance", 0.5, "--min", 10,
                        "--method", "cpu")
    sizes = np.bincount(labels[labels >= 0])
    assert labels.dtype == np.int32 and len(labels) == len(street)
    assert sizes.tolist() == expected["sizes"]
    assert (labels < 0).sum() == len(street) - sum(expected["sizes"])


def test_cluster_takes_float32_float64_and_clouds_alike(street):
    by_cloud = cumulus.cluster(street, 0.5, method="cpu")
    assert np.array_equal(cumulus.cluster(street.local_points, 0.5, method="cpu"), by_cloud)
    assert np.array_equal(cumulus.cluster(street.points, 0.5, method="cpu"), by_cloud)


def test_a_strided_array_is_copied_not_misread(street):
    wide = np.zeros((len(street), 6), dtype=np.float32)
    wide[:, ::2] = street.local_points
    strided = wide[:, ::2]
    assert not strided.flags.c_contiguous
    assert np.array_equal(cumulus.cluster(strided, 0.5, method="cpu"),
                          cumulus.cluster(street, 0.5, method="cpu"))


def test_nan_points_are_left_out_with_label_minus_one():
    pts = np.array([[0, 0, 0], [0.1, 0, 0], [np.nan, 0, 0], [5, 5, 5]], dtype=np.float32)
    assert cumulus.cluster(pts, 0.5, method="cpu").tolist() == [0, 0, -1, 1]


def test_max_size_drops_big_clusters():
    pts = np.array([[0, 0, 0], [0.1, 0, 0], [0.2, 0, 0], [5, 5, 5]], dtype=np.float32)
    assert cumulus.cluster(pts, 0.5, max_size=2, method="cpu").tolist() == [-1, -1, -1, 0]


@pytest.mark.parametrize("bad, error, message", [
    (np.zeros((4, 3), dtype=np.int64), TypeError, "dtype int64"),
    (np.zeros((4, 2), dtype=np.float32), ValueError, r"shape \(N, 3\); got \(4, 2\)"),
    (np.zeros((2, 4, 3), dtype=np.float32), ValueError, "got \\(2, 4, 3\\)"),
    (np.zeros((0, 3), dtype=np.float32), ValueError, "no points"),
    ([[0.0, 0.0, 0.0]], TypeError, "got a list"),
])
def test_bad_arrays_raise_clear_errors(bad, error, message):
    with pytest.raises(error, match=message):
        cumulus.cluster(bad, 0.5)


@pytest.mark.parametrize("tolerance", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_tolerances_raise_invalid_argument(tolerance):
    with pytest.raises(cumulus.InvalidArgument, match="tolerance"):
        cumulus.cluster(np.zeros((3, 3), dtype=np.float32), tolerance)


@pytest.mark.parametrize("call", [
    lambda pts: cumulus.cluster(pts, 1e300),
    lambda pts: cumulus.voxel_grid(pts, 1e39),
    lambda pts: cumulus.voxel_grid(pts, [0.1, -1e39, 0.1]),
    lambda pts: cumulus.radius_search(pts, pts, 1e300),
    lambda pts: cumulus.normals(pts, radius=1e300),
])
def test_numbers_beyond_a_float_raise_invalid_argument(call):
    # Parameters held as float32: refused by name rather than narrowed (undefined in C++).
    with pytest.raises(cumulus.InvalidArgument, match="about 3.4e38"):
        call(np.zeros((3, 3), dtype=np.float32))


def test_a_distance_beyond_a_float_limits_nothing():
    pts = np.array([[0, 0, 0], [3, 0, 0]], dtype=np.float32)
    far = cumulus.knn(pts, pts[:1] + 1, 2, max_distance=1e300, method="cpu")
    none = cumulus.knn(pts, pts[:1] + 1, 2, method="cpu")
    assert np.array_equal(far[0], none[0]) and far[0].tolist() == [[0, 1]]


def test_float64_points_float32_cannot_hold_are_refused():
    with pytest.raises(cumulus.InvalidArgument, match="beyond what float32 holds"):
        cumulus.cluster(np.array([[0.0, 0.0, 0.0], [1e300, 0.0, 0.0]]), 0.5)
    # Infinite ones are left out, as NaNs are.
    labels = cumulus.cluster(np.array([[0.0, 0, 0], [np.inf, 0, 0], [0.1, 0, 0]]), 0.5, method="cpu")
    assert labels.tolist() == [0, -1, 0]


def test_unknown_methods_list_the_valid_ones():
    with pytest.raises(cumulus.InvalidArgument, match="gpu-edge-rs"):
        cumulus.cluster(np.zeros((3, 3), dtype=np.float32), 0.5, method="fast")


@pytest.mark.skipif(GPU, reason="checks the message a machine without a GPU gives")
def test_gpu_methods_without_a_gpu_raise_gpu_error():
    with pytest.raises(cumulus.GpuError, match="needs a GPU"):
        cumulus.cluster(np.zeros((3, 3), dtype=np.float32), 0.5, method="gpu")


def test_calls_from_threads_give_the_same_labels(street):
    expected = cumulus.cluster(street, 0.5, method="cpu")
    results = [None] * 3

    def run(i):
        results[i] = cumulus.cluster(street, 0.5, method="cpu")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(r, expected) for r in results)


def test_last_timings_name_the_method_and_stages(street):
    cumulus.cluster(street, 0.5, method="cpu")
    t = cumulus.last_timings()
    assert t["method"] == "cpu" and t["total_ms"] > 0 and t["stages"]


def brute_knn(targets, queries, k):
    d = ((queries[:, None, :].astype(np.float64) - targets[None, :, :]) ** 2).sum(axis=2)
    order = np.argsort(d, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(d, order, axis=1)


def test_knn_matches_brute_force():
    rng = np.random.default_rng(3)
    targets = rng.uniform(0, 10, (500, 3)).astype(np.float32)
    queries = rng.uniform(0, 10, (50, 3)).astype(np.float32)
    idx, sq = cumulus.knn(targets, queries, k=5, method="cpu")
    bidx, bsq = brute_knn(targets, queries, 5)
    assert idx.shape == (50, 5) and np.array_equal(idx, bidx)
    assert np.allclose(sq, bsq, rtol=1e-5)


def test_radius_search_matches_brute_force():
    rng = np.random.default_rng(4)
    targets = rng.uniform(0, 5, (400, 3)).astype(np.float32)
    offsets, idx, sq = cumulus.radius_search(targets, targets[:20], radius=0.8, method="cpu")
    d = ((targets[:20, None, :].astype(np.float64) - targets[None]) ** 2).sum(axis=2)
    for q in range(20):
        got = set(idx[offsets[q]:offsets[q + 1]].tolist())
        assert got == set(np.nonzero(d[q] < 0.64)[0].tolist())


def test_register_gives_the_clis_transform():
    source = cumulus.read(str(SAMPLE / "object_source.ply"))
    target = cumulus.read(str(SAMPLE / "object_target.ply"))
    r = cumulus.register(source, target, max_correspondence_distance=0.05, max_iterations=100,
                         method="cpu")
    assert r.converged and r.iterations > 0 and r.transform.shape == (4, 4)
    expected = cli_json("register", SAMPLE / "object_source.ply", SAMPLE / "object_target.ply",
                        "--max-distance", 0.05, "--max-iterations", 100, "--method", "cpu")
    assert r.iterations == expected["iterations"]
    assert np.allclose(r.transform, np.array(expected["transform"]).reshape(4, 4), atol=1e-9)


def test_point_to_plane_gives_the_clis_transform():
    source = cumulus.read(str(SAMPLE / "object_source.ply"))
    target = cumulus.read(str(SAMPLE / "object_target.ply"))
    r = cumulus.register(source, target, max_correspondence_distance=0.05, max_iterations=100,
                         method="cpu", metric="point-to-plane", normals_k=15)
    assert r.metric == "point-to-plane" and "normals" in r.timings
    expected = cli_json("register", SAMPLE / "object_source.ply", SAMPLE / "object_target.ply",
                        "--max-distance", 0.05, "--max-iterations", 100, "--method", "cpu",
                        "--metric", "point-to-plane", "--normals-k", 15)
    assert expected["metric"] == "point-to-plane"
    assert r.iterations == expected["iterations"]
    assert np.allclose(r.transform, np.array(expected["transform"]).reshape(4, 4), atol=1e-9)
    with pytest.raises(cumulus.InvalidArgument, match="metric"):
        cumulus.register(source, target, metric="plane", method="cpu")


def test_gicp_gives_the_clis_transform():
    source = cumulus.read(str(SAMPLE / "object_source.ply"))
    target = cumulus.read(str(SAMPLE / "object_target.ply"))
    r = cumulus.register(source, target, max_correspondence_distance=0.05, max_iterations=100,
                         method="cpu", metric="gicp", gicp_k=15)
    assert r.metric == "gicp" and r.converged and r.iterations > 0
    expected = cli_json("register", SAMPLE / "object_source.ply", SAMPLE / "object_target.ply",
                        "--max-distance", 0.05, "--max-iterations", 100, "--method", "cpu",
                        "--metric", "gicp", "--gicp-k", 15)
    assert expected["metric"] == "gicp" and expected["gicp"]["k"] == 15
    assert r.iterations == expected["iterations"]
    assert np.allclose(r.transform, np.array(expected["transform"]).reshape(4, 4), atol=1e-9)
    with pytest.raises(cumulus.InvalidArgument, match="neighbourhood"):
        cumulus.register(source, target, metric="gicp", gicp_k=2, method="cpu")


def _rotation_error_deg(a, b):
    e = np.linalg.inv(b) @ a
    return np.degrees(np.arccos(np.clip((np.trace(e[:3, :3]) - 1) / 2, -1, 1))), \
        np.linalg.norm(e[:3, 3])


def test_register_global_finds_the_pose_from_any_start():
    source = cumulus.read(str(SAMPLE / "object_source.ply"))
    target = cumulus.read(str(SAMPLE / "object_target.ply"))
    truth = np.loadtxt(SAMPLE / "object_pose.txt")
    # The source turned 120 degrees about z and moved: the pose to find is truth * motion^-1.
    c, s = np.cos(np.radians(120)), np.sin(np.radians(120))
    motion = np.array([[c, -s, 0, 0.1], [s, c, 0, -0.05], [0, 0, 1, 0.02], [0, 0, 0, 1]])
    moved = source.points @ motion[:3, :3].T + motion[:3, 3]
    r = cumulus.register_global(moved, target, method="cpu-mutual")
    assert r.found, r.reason
    deg, dist = _rotation_error_deg(r.transform, truth @ np.linalg.inv(motion))
    assert deg < 1 and dist < 0.002
    assert r.pairs.shape == (len(r.inlier), 2) and r.pairs.dtype == np.int32
    assert int(r.inlier.sum()) == r.inliers
    assert r.refinement is not None and r.refinement.converged
    assert r.hypotheses >= 100000 and 0.25 <= r.overlap <= 1
    assert set(r.timings) >= {"keypoints", "features", "matching", "hypotheses", "refinement"}


def test_register_global_says_why_it_found_none():
    source = cumulus.read(str(SAMPLE / "object_source.ply"))
    target = cumulus.read(str(SAMPLE / "object_target.ply"))
    r = cumulus.register_global(source, target, method="cpu-mutual", min_overlap=1.0,
                                refine=False)
    assert not r.found and "no alignment found" in r.reason and r.refinement is None
    with pytest.raises(cumulus.InvalidArgument):
        cumulus.register_global(source, target, method="cpu-mutual", confidence=1.0)


@needs_gpu
def test_register_global_on_the_gpu_gives_the_cpu_methods_pose():
    source = cumulus.read(str(SAMPLE / "object_source.ply"))
    target = cumulus.read(str(SAMPLE / "object_target.ply"))
    gpu = cumulus.register_global(source, target, method="gpu")
    truth = np.loadtxt(SAMPLE / "object_pose.txt")
    deg, dist = _rotation_error_deg(gpu.transform, truth)
    assert gpu.found and deg < 1 and dist < 0.002


def test_register_takes_a_robust_kernel():
    source = cumulus.read(str(SAMPLE / "object_source.ply"))
    target = cumulus.read(str(SAMPLE / "object_target.ply"))
    truth = np.loadtxt(SAMPLE / "object_pose.txt")
    r = cumulus.register(source, target, max_correspondence_distance=0.02, initial=truth,
                         method="cpu", kernel="tukey", kernel_scale=0.02)
    assert r.kernel == "tukey" and r.converged
    with pytest.raises(cumulus.InvalidArgument, match="scale"):
        cumulus.register(source, target, method="cpu", kernel="huber")
    with pytest.raises(cumulus.InvalidArgument, match="kernel"):
        cumulus.register(source, target, method="cpu", kernel="cauchy", kernel_scale=1.0)


def test_register_runs_every_iteration_with_every_stopping_test_off():
    source = cumulus.read(str(SAMPLE / "object_source.ply"))
    target = cumulus.read(str(SAMPLE / "object_target.ply"))
    truth = np.loadtxt(SAMPLE / "object_pose.txt")
    r = cumulus.register(source, target, max_correspondence_distance=0.02, initial=truth,
                         method="cpu", max_iterations=12, transformation_epsilon=0,
                         fitness_epsilon=-1, absolute_mse=0)
    assert r.iterations == 12 and r.stop == "max-iterations"
    with pytest.raises(cumulus.InvalidArgument, match="absolute MSE"):
        cumulus.register(source, target, method="cpu", absolute_mse=-1)


def test_register_refuses_a_non_rigid_guess(street):
    with pytest.raises(cumulus.InvalidArgument):
        cumulus.register(street, street, initial=np.diag([2.0, 1, 1, 1]), method="cpu")


def test_normals_are_unit_and_fpfh_rows_sum_to_three_hundred(street):
    pts = street.local_points[:5000]
    normals, curvature = cumulus.normals(pts, k=16, method="cpu")
    ok = np.isfinite(normals).all(axis=1)
    assert ok.mean() > 0.9 and np.allclose(np.linalg.norm(normals[ok], axis=1), 1, atol=1e-5)
    assert curvature.shape == (5000,)
    h = cumulus.fpfh(pts, k=16, normals=normals, method="cpu")
    assert h.shape == (5000, 33)
    rows = np.isfinite(h).all(axis=1)
    assert np.allclose(h[rows].sum(axis=1), 300, atol=0.05)
    assert cumulus.pfh(pts[:500], k=8, method="cpu").shape == (500, 125)


def test_segment_cpu_methods_agree_and_list_segments():
    image = cumulus.read(str(SAMPLE / "street_range.png"), depth_scale="kitti")
    a = cumulus.segment(image, epsilon=0.1, method="cpu")
    b = cumulus.segment(image.depth, epsilon=0.1, method="cpu-mt")
    assert np.array_equal(a.rows, b.rows) and np.array_equal(a.offsets, b.offsets)
    segs = a.segments(image)
    # segment_count counts cut pairs; segments() leaves out pairs across invalid pixels.
    assert 0 < len(segs) <= a.segment_count
    assert segs.dtype.names == ("column", "start_row", "end_row", "start_depth", "end_depth")
    valid = image.depth[segs["start_row"], segs["column"]]
    assert np.array_equal(valid, segs["start_depth"])


def test_segment_batch_of_raw_units_equals_segment():
    image = cumulus.read(str(SAMPLE / "street_range.png"), depth_scale="kitti")
    scale = 1 / 256
    units = np.round(np.nan_to_num(image.depth) / scale).astype(np.uint16)
    stack = np.stack([units, units[::-1].copy()])
    results = cumulus.segment_batch(stack, scale=scale, epsilon=0.1)
    assert len(results) == 2
    for r, u in zip(results, stack):
        one = cumulus.segment(np.where(u > 0, u * scale, 0).astype(np.float32), epsilon=0.1,
                              method="cpu")
        assert np.array_equal(r.rows, one.rows) and np.array_equal(r.offsets, one.offsets)
        assert np.array_equal(r.levels, one.levels)
    # 1/256 is a power of two: the float32 product is the one the units are scaled to.
    metres = cumulus.segment_batch(stack.astype(np.float32) * np.float32(scale), epsilon=0.1)
    for a, b in zip(metres, results):
        assert np.array_equal(a.rows, b.rows) and np.array_equal(a.offsets, b.offsets)
    with pytest.raises(cumulus.InvalidArgument, match="scale"):
        cumulus.segment_batch(stack, epsilon=0.1)
    with pytest.raises(cumulus.InvalidArgument, match="scale"):
        cumulus.segment_batch(stack, scale=-1.0)
    with pytest.raises(ValueError, match="3-D"):
        cumulus.segment_batch(units, scale=scale)


def test_filters_and_the_pipeline_match_the_cli(street):
    voxels = cumulus.voxel_grid(street, 0.1, method="cpu")
    assert 0 < len(voxels) < len(street)
    r = cumulus.pipeline(street, method="cpu", voxel=0.1, ground="ransac-plane", tolerance=0.5,
                         min_size=10)
    expected = cli_json("pipeline", SAMPLE / "street_scene.pcd", "--method", "cpu", "--voxel",
                        0.1, "--ground", "ransac-plane", "--tolerance", 0.5, "--min", 10)
    assert len(r.objects) == len(expected["objects"])
    assert [o["points"] for o in r.objects] == [o["points"] for o in expected["objects"]]
    assert r.ground_points == expected["ground_points"]


def test_pipeline_presets_are_read_and_checked(tmp_path, street):
    good = tmp_path / "p.json"
    good.write_text('{"voxel": 0.2, "tolerance": 0.5, "min": 10, "method": "cpu"}')
    r = cumulus.pipeline(street, str(good))
    assert r.stages[0]["name"].startswith("voxel") and r.objects
    bad = tmp_path / "bad.json"
    bad.write_text('{"voxels": 0.2}')
    with pytest.raises(cumulus.InvalidArgument, match="voxels"):
        cumulus.pipeline(street, str(bad))


def test_methods_and_devices_describe_the_tables():
    for algorithm in ("cluster", "segment", "knn", "register", "features", "filter", "ground",
                      "pipeline"):
        rows = cumulus.methods(algorithm)
        assert rows and {"name", "device", "origin", "description"} <= set(rows[0])
    assert [r["name"] for r in cumulus.methods("cluster")][:2] == ["cpu", "gpu"]
    assert cumulus.devices()[0]["built_with_cuda"] in (True, False)


def test_every_public_name_has_a_docstring_and_a_stub():
    stub = (SAMPLE.parent / "python" / "cumulus" / "__init__.pyi").read_text()
    public = [n for n in dir(cumulus) if not n.startswith("_") and n not in ("dask",)]
    for name in public:
        obj = getattr(cumulus, name)
        if callable(obj):
            assert obj.__doc__, name
            assert f" {name}" in stub, f"{name} missing from __init__.pyi"


@needs_gpu
def test_gpu_methods_give_the_cpus_results(kitti):
    cpu = cumulus.cluster(kitti, 0.5, 10, method="cpu")
    for m in ("gpu", "gpu-edge-rs"):
        assert np.array_equal(cumulus.cluster(kitti, 0.5, 10, method=m), cpu), m
    targets = kitti.local_points
    for m in ("gpu", "gpu-kdtree", "gpu-bruteforce"):
        idx, sq = cumulus.knn(targets, targets[:2000], k=8, method=m)
        cidx, csq = cumulus.knn(targets, targets[:2000], k=8, method="cpu")
        assert np.array_equal(sq, csq), m
        offsets, _, rsq = cumulus.radius_search(kitti, targets[:2000], radius=0.5, method=m)
        coffsets, _, crsq = cumulus.radius_search(kitti, targets[:2000], radius=0.5,
                                                  method="cpu")
        assert np.array_equal(offsets, coffsets) and np.array_equal(rsq, crsq), m
    voxels = cumulus.voxel_grid(kitti, 0.2, method="gpu")
    assert len(voxels) == len(cumulus.voxel_grid(kitti, 0.2, method="cpu"))


@needs_gpu
def test_gpu_clustering_in_slabs_gives_the_same_labels(kitti):
    whole = cumulus.cluster(kitti, 0.5, 10, method="gpu")
    cumulus.set_gpu_memory_limit(8)  # a few slabs for a KITTI frame
    try:
        slabs = cumulus.cluster(kitti, 0.5, 10, method="gpu")
        assert any(k.startswith("partition") for k in cumulus.last_timings()["stages"])
    finally:
        cumulus.set_gpu_memory_limit(0)
    assert np.array_equal(slabs, whole)


def test_searches_give_the_same_from_clouds_and_from_arrays():
    rng = np.random.default_rng(8)
    world = rng.uniform(0, 20, (3000, 3)) + np.array([600000.0, 4200000.0, 50.0])
    targets = cumulus.Cloud(world)  # a local origin
    assert targets.origin != (0.0, 0.0, 0.0)
    queries = world[:40] + 0.05
    idx, sq = cumulus.knn(targets, queries, k=3, method="cpu")
    bidx, bsq = brute_knn(world, queries, 3)
    assert np.array_equal(idx, bidx) and np.allclose(sq, bsq, rtol=1e-3, atol=1e-6)
    offsets, found, _ = cumulus.radius_search(targets, cumulus.Cloud(queries), radius=0.5,
                                              method="cpu")
    d = ((queries[:, None, :] - world[None]) ** 2).sum(axis=2)
    for q in range(40):
        assert set(found[offsets[q]:offsets[q + 1]].tolist()) == set(np.nonzero(d[q] < 0.25)[0])
