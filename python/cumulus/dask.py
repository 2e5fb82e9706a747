"""Cumulus on a Dask cluster: datasets and sequences file by file, and clouds too big for one
GPU in tiles, on every worker of every host.

One worker per GPU: give each worker process one GPU with CUDA_VISIBLE_DEVICES and one thread
(:func:`local_cluster` does this on one host; on several, start ``dask-worker`` per GPU as the
README shows). Tasks carry their inputs, so Dask can run a task again elsewhere when its worker
dies; the results are the same.
"""
import math
import os
import shutil
import socket
import tempfile
import uuid

import numpy as np

from . import _core
from ._core import Cloud, Error, read

# File tasks of map_files, and what each returns per file.
TASKS = {
    "cluster": "int32 labels (tolerance, min_size, max_size, method)",
    "normals": "(normals, curvature) (k or radius, method)",
    "pfh": "histograms (N, 125) (k or radius, normal_k, method)",
    "fpfh": "histograms (N, 33) (k or radius, normal_k, method)",
    "ground": "(ground indices, plane) (algorithm, threshold, method)",
    "objects": "a dict of the pipeline's labels, objects and stages (pipeline()'s arguments)",
    "segment": "a dict of offsets, rows and segments (epsilon, ..., method; depth_scale)",
    "odometry": "poses (frames, 4, 4) of a whole sequence: each item is a sequence's folder, "
                "glob or list file (Odometry's arguments)",
}

# Bytes a tile's point needs on a worker: its coordinates in and out, labels, the method's
# host-side copies, with room to spare.
_BYTES_PER_TILE_POINT = 256
_MAX_TILE_POINTS = 1 << 26  # what one `gpu` clustering call takes


def _file_task(path, task, depth_scale, params):
    import cumulus

    try:
        if task == "odometry":
            return cumulus.odometry(path, **params)
        data = cumulus.read(path, depth_scale=depth_scale)
        if callable(task):
            return task(data, **params)
        if task == "cluster":
            return cumulus.cluster(data, **params)
        if task == "normals":
            return cumulus.normals(data, **params)
        if task in ("pfh", "fpfh"):
            return getattr(cumulus, task)(data, **params)
        if task == "ground":
            return cumulus.ground(data, **params)
        if task == "objects":
            r = cumulus.pipeline(data, **params)
            return {"labels": r.labels, "objects": r.objects, "stages": r.stages,
                    "ground_plane": r.ground_plane, "points": r.cloud.points}
        if task == "segment":
            r = cumulus.segment(data, **params)
            return {"offsets": np.array(r.offsets), "rows": np.array(r.rows),
                    "segments": r.segments(data)}
    except Error as e:
        raise type(e)(f"{path}: {e}") from None
    raise ValueError(f"unknown task {task!r}; valid: {', '.join(sorted(TASKS))} or a callable")


def map_files(client, files, task, *, depth_scale=None, progress=False, **params):
    """Runs ``task`` on every file on the cluster's workers; returns the results in the order of
    ``files``. ``task``: a name of :data:`TASKS` with that function's keyword arguments, or a
    callable taking what :func:`cumulus.read` returns and ``**params``. Depth images need
    ``depth_scale``. An error names the file. ``progress``: Dask's progress bar."""
    if not callable(task) and task not in TASKS:
        raise ValueError(f"unknown task {task!r}; valid: {', '.join(sorted(TASKS))} or a callable")
    files = [os.fspath(f) for f in files]
    run = uuid.uuid4().hex[:8]
    name = task if isinstance(task, str) else getattr(task, "__name__", "task")
    futures = [
        client.submit(_file_task, f, task, depth_scale, params, key=f"cumulus-{name}-{run}-{i}",
                      pure=False)
        for i, f in enumerate(files)
    ]
    if progress:
        from distributed import progress as show

        show(futures)
    return client.gather(futures)


def _cluster_tile(number, key, points, tolerance, method):
    """A tile's labels (every component kept); ``points``: the tile's points, or (the cloud's
    .npy file, the tile's members' .npy file) to read them from."""
    if isinstance(points, tuple):
        cloud_file, members_file = points
        points = np.load(cloud_file, mmap_mode="r")[np.load(members_file)]
    # Test hook: the first task to create this file kills its worker, to test Dask's retry.
    marker = os.environ.get("CUMULUS_DASK_TEST_KILL_ONCE")
    if marker:
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            os._exit(1)
        except FileExistsError:
            pass
    import cumulus

    try:
        return cumulus.cluster(points, tolerance, 1, None, method)
    except Error as e:
        raise type(e)(
            f"tile {number} (x {key[0]}, y {key[1]}; {len(points)} points): {e}") from None


def _as_cloud(cloud_or_path):
    if isinstance(cloud_or_path, Cloud):
        return cloud_or_path
    if isinstance(cloud_or_path, (str, os.PathLike)):
        return read(os.fspath(cloud_or_path))
    return Cloud(cloud_or_path)


def choose_tile_size(client, cloud, tolerance):
    """The tile edge (metres) cluster_tiled uses when given none: tiles of at most what the
    smallest worker's memory holds (and one `gpu` call takes), at least two per worker."""
    points = cloud.local_points
    finite = np.isfinite(points).all(axis=1)
    n = int(finite.sum())
    if n == 0:
        raise _core.InvalidArgument("the cloud has no finite point")
    lo = points[finite, :2].min(axis=0)
    hi = points[finite, :2].max(axis=0)
    area = float(max(hi[0] - lo[0], tolerance) * max(hi[1] - lo[1], tolerance))
    workers = 1
    memory = 4 << 30
    if client is not None:
        info = client.scheduler_info()["workers"]
        workers = max(1, len(info))
        limits = [w.get("memory_limit") or 0 for w in info.values()]
        if limits and min(limits) > 0:
            memory = min(limits)
    per_tile = min(memory // _BYTES_PER_TILE_POINT, _MAX_TILE_POINTS,
                   max(1, math.ceil(n / (2 * workers))))
    edge = math.sqrt(area * per_tile / n)
    return max(edge, 4.0 * tolerance)


def _workers_on_this_host(client):
    here = socket.gethostname()
    hosts = client.run(socket.gethostname)
    return bool(hosts) and all(h == here for h in hosts.values())


def _scratch_folder(nbytes, base=None):
    """A fresh folder for the shared files: under ``base``, else in memory (/dev/shm) when it
    has room, else in the temporary folder."""
    if base is None:
        base = "/dev/shm"
        if not os.path.isdir(base) or shutil.disk_usage(base).free < 2 * nbytes:
            base = tempfile.gettempdir()
    return tempfile.mkdtemp(prefix="cumulus-tiles-", dir=base)


def cluster_tiled(client, cloud_or_path, tolerance, min_size=1, max_size=None, method=None,
                  tile_size=None, progress=False, transport=None, scratch=None):
    """Euclidean clustering of a cloud too big for one GPU or one host: square tiles of
    ``tile_size`` metres in x and y (None: :func:`choose_tile_size`), each with a halo of the
    tolerance, clustered on the workers (client None: one after another in this process) and
    merged exactly, so the labels equal :func:`cumulus.cluster`'s on the whole cloud.
    ``cloud_or_path``: a Cloud, an (N, 3) array or a file. An error names the tile.

    ``transport``: how tiles reach the workers. "tasks": each task carries its tile's points
    (workers anywhere). "files": the cloud is written once, and each tile's member indices, to a
    scratch folder that every worker reads (the workers gather their tiles themselves): a fresh
    folder in /dev/shm for workers on this host, or one under ``scratch``, a folder every
    worker sees at the same path (a shared filesystem). None: "files" when every worker runs on
    this host or ``scratch`` is given, else "tasks". The files are removed at the end.
    Either way a task holds all it needs, so Dask can run it again after its worker dies."""
    cloud = _as_cloud(cloud_or_path)
    tolerance = float(tolerance)
    if not (math.isfinite(tolerance) and tolerance > 0):
        raise _core.InvalidArgument(f"tolerance must be a positive finite number; got {tolerance}")
    if tile_size is None:
        tile_size = choose_tile_size(client, cloud, tolerance)
    points = cloud.local_points
    # Every neighbour of a tile's point lies within the tolerance of it; the margin covers the
    # float rounding of the distance test.
    tiles = _core._plan_tiles(points, float(tile_size), tolerance * (1 + 1e-4))
    merge = _core._ClusterTileMerge(len(points))
    if client is None:
        for number, (ix, iy, members) in enumerate(tiles):
            merge.add(members, _cluster_tile(number, (ix, iy), points[members], tolerance, method))
        return merge.finish(tolerance, min_size, max_size)
    from distributed import as_completed

    if transport is None:
        transport = "files" if scratch or _workers_on_this_host(client) else "tasks"
    if transport not in ("files", "tasks"):
        raise ValueError(f"transport is 'files' or 'tasks', not {transport!r}")
    run = uuid.uuid4().hex[:8]
    base = scratch
    scratch = _scratch_folder(points.nbytes, base) if transport == "files" else None
    members_of = {}
    futures = []
    try:
        if scratch:
            cloud_file = os.path.join(scratch, "cloud.npy")
            np.save(cloud_file, points)
        for number, (ix, iy, members) in enumerate(tiles):
            if scratch:
                members_file = os.path.join(scratch, f"tile{number}.npy")
                np.save(members_file, members)
                data = (cloud_file, members_file)
            else:
                data = points[members]
            f = client.submit(_cluster_tile, number, (ix, iy), data, tolerance, method,
                              key=f"cumulus-tile-{run}-{number}", pure=False)
            members_of[f.key] = members
            futures.append(f)
        if progress:
            from distributed import progress as show

            show(futures)  # a widget in a notebook; a text bar, returning when done, elsewhere
        for f in as_completed(futures):
            merge.add(members_of[f.key], f.result())
    finally:
        for f in futures:
            f.cancel()
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    return merge.finish(tolerance, min_size, max_size)


# Where local clusters listen unless told otherwise: this machine only.
LOOPBACK = "127.0.0.1"


def local_cluster(gpus=None, **kwargs):
    """A Dask cluster on this host, listening on the loopback interface only (scheduler,
    workers and dashboard; pass ``host=`` to open it wider): one single-threaded worker per
    visible GPU (each seeing only its GPU through CUDA_VISIBLE_DEVICES), or, without GPUs,
    distributed.LocalCluster(**kwargs). ``gpus``: how many GPUs to use (None: all)."""
    import distributed

    host = kwargs.pop("host", LOOPBACK)
    dashboard = kwargs.pop("dashboard_address", f"{host}:0")
    found = [d for d in _core.devices() if d["available"]]
    if not found or gpus == 0:
        return distributed.LocalCluster(host=host, dashboard_address=dashboard, **kwargs)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = visible.split(",") if visible else [str(d["index"]) for d in found]
    ids = ids[: len(found) if gpus is None else gpus]
    # NVLink multicast stays off in workers too (no collective here uses it).
    env_common = {k: os.environ[k] for k in ("NCCL_NVLS_ENABLE",) if k in os.environ}
    workers = {
        f"gpu-{gpu}": {
            "cls": distributed.Nanny,
            "options": {"nthreads": 1, "host": host,
                        "env": {**env_common, "CUDA_VISIBLE_DEVICES": gpu}},
        }
        for gpu in ids
    }
    scheduler = {"cls": distributed.Scheduler,
                 "options": {"host": host, "dashboard_address": dashboard}}
    return distributed.SpecCluster(workers=workers, scheduler=scheduler, **kwargs)
