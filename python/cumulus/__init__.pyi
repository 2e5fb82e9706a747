# Type stubs of the cumulus package (the compiled part, cumulus._core, and pipeline()).
from os import PathLike
from typing import Any, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

Points = Union["Cloud", npt.NDArray[np.float32], npt.NDArray[np.float64]]
Method = Optional[str]
__version__: str

class Error(RuntimeError): ...
class IoError(Error, OSError): ...
class InvalidArgument(Error, ValueError): ...
class GpuError(Error): ...
class Cancelled(Error): ...

class Cloud:
    def __init__(
        self,
        points: npt.ArrayLike,
        intensity: Optional[npt.ArrayLike] = ...,
        rgb: Optional[npt.ArrayLike] = ...,
        normals: Optional[npt.ArrayLike] = ...,
        labels: Optional[npt.ArrayLike] = ...,
    ) -> None: ...
    @property
    def points(self) -> npt.NDArray[np.float64]: ...
    @property
    def local_points(self) -> npt.NDArray[np.float32]: ...
    @property
    def origin(self) -> tuple[float, float, float]: ...
    @property
    def fields(self) -> dict[str, np.ndarray]: ...
    @property
    def metadata(self) -> dict[str, bytes]: ...
    @property
    def width(self) -> int: ...
    @property
    def height(self) -> int: ...
    def __len__(self) -> int: ...

class DepthImage:
    def __init__(self, depth: npt.ArrayLike) -> None: ...
    @property
    def depth(self) -> npt.NDArray[np.float32]: ...
    @property
    def width(self) -> int: ...
    @property
    def height(self) -> int: ...
    @property
    def source_scale(self) -> float: ...

class RegistrationResult:
    transform: npt.NDArray[np.float64]
    fitness: float
    iterations: int
    converged: bool
    stop: str
    stop_reason: str
    method: str
    metric: str
    kernel: str
    cost_evaluations: int
    total_ms: float
    timings: dict[str, float]
    history: list[dict[str, float]]

class GlobalRegistrationResult:
    found: bool
    reason: str
    coarse: npt.NDArray[np.float64]
    transform: npt.NDArray[np.float64]
    voxel: float
    inliers: int
    inlier_rmse: float
    overlap: float
    hypotheses: int
    valid_hypotheses: int
    pairs: npt.NDArray[np.int32]
    inlier: npt.NDArray[np.uint8]
    source_keypoints: Cloud
    target_keypoints: Cloud
    refinement: Optional[RegistrationResult]
    method: str
    total_ms: float
    timings: dict[str, float]

class SegmentResult:
    width: int
    height: int
    offsets: npt.NDArray[np.uint32]
    rows: npt.NDArray[np.uint32]
    levels: npt.NDArray[np.uint8]
    segment_count: int
    method: str
    total_ms: float
    def segments(self, depth: Union[DepthImage, npt.ArrayLike]) -> np.ndarray: ...

class PipelineResult:
    cloud: Cloud
    labels: npt.NDArray[np.int32]
    objects: list[dict[str, Any]]
    stages: list[dict[str, Any]]
    ground_plane: Optional[tuple[float, float, float, float]]
    ground_points: int
    total_ms: float

def read(path: Union[str, PathLike[str]], depth_scale: Union[None, float, str] = ...) -> Union[Cloud, DepthImage]: ...
def write(
    path: Union[str, PathLike[str]],
    data: Union[Points, DepthImage],
    encoding: str = ...,
    allow_precision_loss: bool = ...,
    depth_scale: Union[None, float, str] = ...,
    las_labels: str = ...,
) -> None: ...
def cluster(
    points: Points, tolerance: float, min_size: int = ..., max_size: Optional[int] = ..., method: Method = ...
) -> npt.NDArray[np.int32]: ...
def knn(
    targets: Points, queries: Optional[Points] = ..., k: int = ..., max_distance: float = ..., method: Method = ...
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]: ...
def radius_search(
    targets: Points, queries: Optional[Points] = ..., radius: float = ..., max_neighbours: int = ..., method: Method = ...
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int32], npt.NDArray[np.float32]]: ...
def register(
    source: Points,
    target: Points,
    max_correspondence_distance: float = ...,
    max_iterations: int = ...,
    transformation_epsilon: float = ...,
    fitness_epsilon: float = ...,
    initial: Optional[npt.ArrayLike] = ...,
    method: Method = ...,
    metric: str = ...,
    normals_k: int = ...,
    kernel: str = ...,
    kernel_scale: float = ...,
    gicp_k: int = ...,
    absolute_mse: float = ...,
) -> RegistrationResult: ...
def register_global(
    source: Points,
    target: Points,
    voxel: float = ...,
    hypotheses: int = ...,
    confidence: float = ...,
    pcl_iterations: int = ...,
    similarity: float = ...,
    min_overlap: float = ...,
    seed: int = ...,
    refine: bool = ...,
    metric: str = ...,
    max_correspondence_distance: float = ...,
    method: Method = ...,
) -> GlobalRegistrationResult: ...
def normals(
    points: Points,
    k: Optional[int] = ...,
    radius: Optional[float] = ...,
    viewpoint: Sequence[float] = ...,
    method: Method = ...,
    pcl_compatible: bool = ...,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...
def pfh(
    points: Points,
    k: Optional[int] = ...,
    radius: Optional[float] = ...,
    normals: Optional[npt.ArrayLike] = ...,
    normal_k: Optional[int] = ...,
    normal_radius: Optional[float] = ...,
    viewpoint: Sequence[float] = ...,
    method: Method = ...,
) -> npt.NDArray[np.float32]: ...
def fpfh(
    points: Points,
    k: Optional[int] = ...,
    radius: Optional[float] = ...,
    normals: Optional[npt.ArrayLike] = ...,
    normal_k: Optional[int] = ...,
    normal_radius: Optional[float] = ...,
    viewpoint: Sequence[float] = ...,
    method: Method = ...,
) -> npt.NDArray[np.float32]: ...
def segment(
    depth: Union[DepthImage, npt.ArrayLike],
    epsilon: float = ...,
    distance: str = ...,
    row_pitch: float = ...,
    median: int = ...,
    method: Method = ...,
) -> SegmentResult: ...
def segment_batch(
    depths: npt.ArrayLike,
    scale: Optional[float] = ...,
    epsilon: float = ...,
    distance: str = ...,
    row_pitch: float = ...,
    median: int = ...,
) -> list[SegmentResult]: ...
def crop_box(points: Points, min: Sequence[float], max: Sequence[float], negative: bool = ..., method: Method = ...) -> Cloud: ...
def voxel_grid(points: Points, leaf: Union[float, Sequence[float]], min_points: int = ..., method: Method = ...) -> Cloud: ...
def remove_statistical_outliers(points: Points, mean_k: int = ..., stddev_mul: float = ..., method: Method = ...) -> Cloud: ...
def remove_radius_outliers(points: Points, radius: float, min_neighbors: int = ..., method: Method = ...) -> Cloud: ...
def ground(
    points: Points,
    algorithm: str = ...,
    threshold: float = ...,
    max_iterations: int = ...,
    axis: Optional[Sequence[float]] = ...,
    max_angle_deg: float = ...,
    seed: int = ...,
    sensor_height: float = ...,
    method: Method = ...,
) -> tuple[npt.NDArray[np.int32], tuple[float, float, float, float]]: ...
def objects(
    points: Points, labels: npt.ArrayLike, ground_plane: Optional[Sequence[float]] = ...
) -> list[dict[str, Any]]: ...
def pipeline(
    points: Points,
    preset: Optional[Union[str, PathLike[str]]] = ...,
    *,
    method: Method = ...,
    crop: Optional[Sequence[float]] = ...,
    crop_negative: bool = ...,
    voxel: Union[None, float, Sequence[float]] = ...,
    min_points: int = ...,
    sor: Optional[tuple[int, float]] = ...,
    ror: Optional[tuple[float, int]] = ...,
    ground: str = ...,
    ground_threshold: float = ...,
    tolerance: Optional[float] = ...,
    min_size: int = ...,
    max_size: int = ...,
) -> PipelineResult: ...
def methods(algorithm: str) -> list[dict[str, str]]: ...
def devices() -> list[dict[str, Any]]: ...
def last_timings() -> dict[str, Any]: ...
def set_gpu_memory_limit(megabytes: int) -> None: ...

class Odometry:
    def __init__(
        self,
        method: Method = ...,
        filter_method: Method = ...,
        target: str = ...,
        voxel: float = ...,
        max_correspondence_distance: float = ...,
        max_iterations: int = ...,
        map_scans: int = ...,
        map_voxel: float = ...,
        motion_prior: bool = ...,
        ground: str = ...,
        metric: str = ...,
    ) -> None: ...
    def add(self, points: Points) -> dict[str, Any]: ...
    def skip(self) -> npt.NDArray[np.float64]: ...
    @property
    def poses(self) -> npt.NDArray[np.float64]: ...

def odometry(frames: Union[str, PathLike[str], Sequence[Any]], **params: Any) -> npt.NDArray[np.float64]: ...
def sequence_frames(spec: str) -> list[str]: ...
def generate_street_frame(
    frame: int,
    frames: int = ...,
    seed: int = ...,
    terrain: str = ...,
    speed: float = ...,
    speed_variation: float = ...,
    start_x: float = ...,
    weave: float = ...,
    dropout: float = ...,
    vegetation: bool = ...,
) -> tuple[Cloud, npt.NDArray[np.float64]]: ...
