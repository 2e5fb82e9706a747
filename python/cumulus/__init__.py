"""Cumulus from Python: GPU-accelerated point-cloud and depth-image algorithms on numpy arrays.

Points are numpy arrays of shape (N, 3): float32 (used in place when C-contiguous) or float64
world coordinates, or a :class:`Cloud` from :func:`read`. Every algorithm takes ``method``: a
name from :func:`methods` (``"cpu"``, ``"gpu"``, the papers' methods...), or None for the
default (``"gpu"`` where a GPU can be used, else ``"cpu"``). The GIL is released while the
backend computes. Errors raise :class:`Error` subclasses carrying the CLI's messages:
:class:`InvalidArgument` (also a ValueError), :class:`IoError` (also an OSError),
:class:`GpuError`; wrong array types and shapes raise TypeError and ValueError.

``cumulus.dask`` spreads datasets and huge clouds over a Dask cluster's workers.
"""
import json as _json

from ._core import (  # noqa: F401
    Cancelled,
    Cloud,
    DepthImage,
    GlobalRegistrationResult,
    Error,
    GpuError,
    InvalidArgument,
    IoError,
    Odometry,
    PipelineResult,
    RegistrationResult,
    SegmentResult,
    cluster,
    crop_box,
    devices,
    fpfh,
    generate_street_frame,
    ground,
    knn,
    last_timings,
    methods,
    normals,
    objects,
    pfh,
    radius_search,
    read,
    register,
    register_global,
    remove_radius_outliers,
    remove_statistical_outliers,
    segment,
    segment_batch,
    sequence_frames,
    set_gpu_memory_limit,
    voxel_grid,
    write,
)

__version__ = "0.1.0"

# The preset keys `cumulus-cli pipeline --preset` reads that pipeline() takes too.
_PRESET_KEYS = {
    "method": "method",
    "crop": "crop",
    "crop-negative": "crop_negative",
    "voxel": "voxel",
    "min-points": "min_points",
    "sor": "sor",
    "ror": "ror",
    "ground": "ground",
    "ground-threshold": "ground_threshold",
    "tolerance": "tolerance",
    "min": "min_size",
    "max": "max_size",
}


def _preset(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = _json.load(f)
    except OSError as e:
        raise IoError(f"{path}: cannot read the preset: {e.strerror}") from None
    except ValueError as e:
        raise InvalidArgument(f"{path}: the preset is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise InvalidArgument(f"{path}: the preset must be a JSON object")
    unknown = sorted(set(data) - set(_PRESET_KEYS))
    if unknown:
        raise InvalidArgument(
            f"{path}: the preset names unknown settings {', '.join(unknown)}; "
            f"valid: {', '.join(sorted(_PRESET_KEYS))}"
        )
    out = {}
    for key, value in data.items():
        if key in ("crop", "sor", "ror") and isinstance(value, str):
            value = [float(v) for v in value.split(",")]
        out[_PRESET_KEYS[key]] = value
    return out


def pipeline(
    points,
    preset=None,
    *,
    method=None,
    crop=None,
    crop_negative=False,
    voxel=None,
    min_points=0,
    sor=None,
    ror=None,
    ground="none",
    ground_threshold=0.2,
    tolerance=None,
    min_size=1,
    max_size=2**31 - 1,
):
    """From a raw scan to objects, as ``cumulus-cli pipeline``: crop (x0, y0, z0, x1, y1, z1),
    voxel (leaf), statistical outliers sor=(k, stddev), radius outliers ror=(radius, min),
    ground ("none", "ransac-plane", "range-rdp"), clustering (tolerance, min_size, max_size) and
    boxes; each stage optional. method "cpu" is PCL's chain, "gpu" ours (None: gpu where a GPU
    can be used). preset: a JSON file with the CLI's keys; keyword arguments given here win.
    Returns a PipelineResult (cloud, labels, objects, stages, ground_plane)."""
    settings = dict(
        method=method,
        crop=crop,
        crop_negative=crop_negative,
        voxel=voxel,
        min_points=min_points,
        sor=sor,
        ror=ror,
        ground=ground,
        ground_threshold=ground_threshold,
        tolerance=tolerance,
        min_size=min_size,
        max_size=max_size,
    )
    if preset is not None:
        given = {k for k, v in settings.items() if v != pipeline.__kwdefaults__[k]}
        for key, value in _preset(preset).items():
            if key not in given:
                settings[key] = value
    if settings["method"] is None:
        settings["method"] = "gpu" if any(d["available"] for d in devices()) else "cpu"
    if settings["crop"] is not None:
        settings["crop"] = tuple(float(v) for v in settings["crop"])
    if settings["sor"] is not None:
        k, stddev = settings["sor"]
        settings["sor"] = (int(k), float(stddev))
    if settings["ror"] is not None:
        radius, least = settings["ror"]
        settings["ror"] = (float(radius), int(least))
    return _core_pipeline(points, **settings)


def odometry(frames, **params):
    """The trajectory of a sequence: ``frames`` is a sequence spec (a folder, a glob or a list
    file), a list of paths, or a list of clouds or arrays; ``params`` are :class:`Odometry`'s.
    Returns the poses, float64 (frames, 4, 4), the first the identity."""
    if isinstance(frames, (str, bytes)) or hasattr(frames, "__fspath__"):
        frames = sequence_frames(str(frames))
    o = Odometry(**params)
    for frame in frames:
        o.add(read(str(frame)) if isinstance(frame, str) or hasattr(frame, "__fspath__")
              else frame)
    return o.poses


from ._core import _pipeline as _core_pipeline  # noqa: E402
