"""Benchmarks of the Python layer (run with the module on PYTHONPATH):

  python3 -m cumulus.bench overhead [--method M] [--points N] [--calls N]
      what a call costs above the C++ call it makes (last_timings()'s call_ms), per function,
      median over the calls: argument checks, array conversion and copies, the GIL, results
  python3 -m cumulus.bench dask [--points N] [--tolerance T] [--tile-size S] [--method M]
                                [--workers N | --gpus N]
      one cloud of N generated points clustered three ways in one run: one call
      (cumulus.cluster, which tiles on its own beyond one GPU call), the tiles one after another
      in this process, and the same tiles over Dask workers (one per GPU, or N CPU workers);
      times, the Dask run's cost over the in-process tiles, and whether all labels are equal

  python3 -m cumulus.bench scaling [--points N] [--frames N] [--sequences N] [--gpus 1,2]
                                   [--dir DIR]
      Dask across GPUs: for each worker count (one worker per GPU), cluster_tiled on one
      generated cloud, map_files clustering every frame of a generated sequence, and map_files
      running odometry over generated drives; times, speed-up against one worker, bytes moved
      per tile, and whether labels and poses equal the one-worker run's

Times are wall-clock on this host; quote them with the machine.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

import cumulus


def _overhead(args):
    rng = np.random.default_rng(1)
    pts = rng.uniform(0, 10, (args.points, 3)).astype(np.float32)
    cloud = cumulus.Cloud(pts)
    queries = cumulus.Cloud(pts[:64])
    cases = {
        "cluster": lambda: cumulus.cluster(pts, 0.5, method=args.method),
        "knn": lambda: cumulus.knn(pts, pts[:64], k=4, method=args.method),
        "radius_search": lambda: cumulus.radius_search(pts, pts[:64], radius=0.3,
                                                       method=args.method),
        "knn (Clouds)": lambda: cumulus.knn(cloud, queries, k=4, method=args.method),
        "radius_search (Clouds)": lambda: cumulus.radius_search(cloud, queries, radius=0.3,
                                                                method=args.method),
    }
    rows = []
    for name, call in cases.items():
        for _ in range(5):
            call()
        over, backend = [], []
        for _ in range(args.calls):
            t = time.perf_counter()
            call()
            wall = (time.perf_counter() - t) * 1e3
            timings = cumulus.last_timings()
            over.append((wall - timings["call_ms"]) * 1e3)
            backend.append(timings["call_ms"])
        rows.append({"function": name, "method": cumulus.last_timings()["method"],
                     "points": args.points, "cpp_call_ms": statistics.median(backend),
                     "overhead_us": statistics.median(over),
                     "overhead_us_p90": sorted(over)[int(0.9 * len(over))]})
    return rows


def _cloud(n, seed=5):
    # Street-like density: about 20 points per square metre over a square, 2 m deep.
    side = float(np.sqrt(n / 20.0))
    rng = np.random.default_rng(seed)
    pts = np.empty((n, 3), dtype=np.float32)
    step = 1 << 24
    for i in range(0, n, step):
        m = min(step, n - i)
        pts[i:i + m, :2] = rng.uniform(0, side, (m, 2))
        pts[i:i + m, 2] = rng.uniform(0, 2, m)
    return pts


def _dask(args):
    import distributed

    import cumulus.dask as cdask

    t = time.perf_counter()
    pts = _cloud(args.points)
    made = time.perf_counter() - t
    cloud = cumulus.Cloud(pts)
    rows = {"points": args.points, "tolerance": args.tolerance, "generate_s": made}
    t = time.perf_counter()
    one = cumulus.cluster(cloud, args.tolerance, method=args.method)
    rows["one_call_s"] = time.perf_counter() - t
    rows["method"] = cumulus.last_timings()["method"]
    tile = args.tile_size or cdask.choose_tile_size(None, cloud, args.tolerance)
    rows["tile_size_m"] = tile
    t = time.perf_counter()
    here = cdask.cluster_tiled(None, cloud, args.tolerance, method=args.method, tile_size=tile)
    rows["tiles_in_process_s"] = time.perf_counter() - t
    if args.workers:
        cluster = cdask.local_cluster(gpus=0, n_workers=args.workers, threads_per_worker=1)
    else:
        cluster = cdask.local_cluster(gpus=args.gpus)
    with cluster, distributed.Client(cluster) as client:
        rows["workers"] = len(client.scheduler_info()["workers"])
        cdask.cluster_tiled(client, _cloud(200_000, seed=9), args.tolerance, method=args.method)
        t = time.perf_counter()
        spread = cdask.cluster_tiled(client, cloud, args.tolerance, method=args.method,
                                     tile_size=tile)
        rows["tiles_on_dask_s"] = time.perf_counter() - t
    rows["dask_over_in_process"] = rows["tiles_on_dask_s"] / rows["tiles_in_process_s"] - 1
    rows["labels_equal"] = bool(np.array_equal(one, here) and np.array_equal(one, spread))
    return rows


def _write_frame(folder, frame, frames, seed):
    import cumulus as c

    # The generated street has about 180 m of buildings: a long drive goes slower.
    cloud, _ = c.generate_street_frame(frame, frames=frames, seed=seed,
                                       speed=min(1.0, 150.0 / frames))
    c.write(f"{folder}/{frame:06d}.bin", cloud)


def _log(rows, what):
    print(f"[{time.strftime('%H:%M:%S')}] {what}", file=sys.stderr, flush=True)
    if rows.get("partial"):
        with open(rows["partial"], "w") as f:
            json.dump(rows, f, indent=2)


def _scaling(args):
    import os

    import distributed

    import cumulus.dask as cdask

    counts = [int(g) for g in args.gpus.split(",")]
    rows = {"points": args.points, "frames": args.frames, "sequences": args.sequences,
            "tolerance": args.tolerance, "runs": [], "partial": args.partial}
    # The frames, written by CPU workers on every core (generating is CPU work), once.
    seq = os.path.join(args.dir, "sequence")
    os.makedirs(seq, exist_ok=True)
    t = time.perf_counter()
    with cdask.local_cluster(gpus=0, n_workers=os.cpu_count(),
                             threads_per_worker=1) as cpus, distributed.Client(cpus) as c:
        c.gather(c.map(_write_frame, [seq] * args.frames, range(args.frames),
                       [args.frames] * args.frames, [1] * args.frames, pure=False))
    rows["frames_written_s"] = time.perf_counter() - t
    files = cumulus.sequence_frames(seq)
    # The drives for odometry: the sequence in equal consecutive parts, each a list file.
    per = len(files) // args.sequences
    drives = []
    for k in range(args.sequences):
        drives.append(os.path.join(args.dir, f"drive{k}.txt"))
        with open(drives[-1], "w") as f:
            f.write("\n".join(files[k * per:(k + 1) * per]) + "\n")
    pts = _cloud(args.points)
    cloud = cumulus.Cloud(pts)
    del pts
    # Tiles for the most workers, the same for every run.
    tile = cdask.choose_tile_size(None, cloud, args.tolerance) / max(1, max(counts)) ** 0.5
    tiles = cumulus._core._plan_tiles(cloud.local_points, tile, args.tolerance * (1 + 1e-4))
    rows.update(tile_size_m=tile, tiles=len(tiles),
                bytes_per_tile=int(16 * sum(len(m) for _, _, m in tiles) / len(tiles)))
    del tiles
    _log(rows, "data ready")
    first = None
    for n in counts:
        with cdask.local_cluster(gpus=n) as cluster, distributed.Client(cluster) as client:
            run = {"workers": len(client.scheduler_info()["workers"])}
            cdask.cluster_tiled(client, _cloud(200_000, seed=9), args.tolerance)
            t = time.perf_counter()
            labels = cdask.cluster_tiled(client, cloud, args.tolerance, tile_size=tile)
            run["cluster_tiled_s"] = time.perf_counter() - t
            _log(rows, f"{n} workers: cluster_tiled {run['cluster_tiled_s']:.2f} s")
            t = time.perf_counter()
            per_frame = cdask.map_files(client, files, "cluster", tolerance=args.tolerance,
                                        min_size=10)
            run["map_files_cluster_s"] = time.perf_counter() - t
            run["frames_per_s"] = len(files) / run["map_files_cluster_s"]
            _log(rows, f"{n} workers: map_files cluster {run['map_files_cluster_s']:.2f} s")
            t = time.perf_counter()
            poses = cdask.map_files(client, drives, "odometry")
            run["map_files_odometry_s"] = time.perf_counter() - t
            if first is None:
                first = (labels, per_frame, poses)
            run["labels_equal"] = bool(np.array_equal(labels, first[0]))
            run["frame_labels_equal"] = all(np.array_equal(a, b)
                                            for a, b in zip(per_frame, first[1]))
            run["poses_equal"] = all(np.array_equal(a, b) for a, b in zip(poses, first[2]))
            rows["runs"].append(run)
            _log(rows, f"{n} workers: odometry {run['map_files_odometry_s']:.2f} s")
    base = rows["runs"][0]
    for run in rows["runs"]:
        for key in ("cluster_tiled_s", "map_files_cluster_s", "map_files_odometry_s"):
            run[key.replace("_s", "_speedup")] = base[key] / run[key]
    rows.pop("partial")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m cumulus.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    o = sub.add_parser("overhead")
    o.add_argument("--method", default=None)
    o.add_argument("--points", type=int, default=1000)
    o.add_argument("--calls", type=int, default=2000)
    d = sub.add_parser("dask")
    d.add_argument("--points", type=float, default=10e6)
    d.add_argument("--tolerance", type=float, default=0.5)
    d.add_argument("--tile-size", type=float, default=None)
    d.add_argument("--method", default=None)
    d.add_argument("--workers", type=int, default=0,
                   help="CPU workers (default: one worker per GPU, or Dask's default)")
    d.add_argument("--gpus", type=int, default=None, help="GPU workers (default: every GPU)")
    s = sub.add_parser("scaling")
    s.add_argument("--points", type=float, default=200e6)
    s.add_argument("--frames", type=int, default=1000)
    s.add_argument("--sequences", type=int, default=4)
    s.add_argument("--tolerance", type=float, default=0.5)
    s.add_argument("--gpus", default="1,2", help="worker counts, one worker per GPU")
    s.add_argument("--dir", default="/tmp/cumulus-scaling", help="where the frames are written")
    s.add_argument("--partial", default=None, help="a JSON file rewritten after each stage")
    args = p.parse_args(argv)
    if args.what in ("dask", "scaling"):
        args.points = int(args.points)
    run = {"overhead": _overhead, "dask": _dask, "scaling": _scaling}[args.what]
    result = run(args)
    json.dump({"host": cumulus.devices()[0].get("name", "no GPU"), "result": result},
              sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
