"""Benchmarks of the Python layer (run with the module on PYTHONPATH):

  python3 -m cumulus.bench overhead [--method M] [--points N] [--calls N]
      what a call costs above the C++ call it makes (last_timings()'s call_ms), per function,
      median over the calls: argument checks, array conversion and copies, the GIL, results
  python3 -m cumulus.bench dask [--points N] [--tolerance T] [--tile-size S] [--method M]
                                [--workers N]
      one cloud of N generated points clustered three ways in one run: one call
      (cumulus.cluster, which tiles on its own beyond one GPU call), the tiles one after another
      in this process, and the same tiles over Dask workers (one per GPU, or N CPU workers);
      times, the Dask run's cost over the in-process tiles, and whether all labels are equal

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
    cases = {
        "cluster": lambda: cumulus.cluster(pts, 0.5, method=args.method),
        "knn": lambda: cumulus.knn(pts, pts[:64], k=4, method=args.method),
        "radius_search": lambda: cumulus.radius_search(pts, pts[:64], radius=0.3,
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
        cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                           dashboard_address=":0")
    else:
        cluster = cdask.local_cluster()
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
    args = p.parse_args(argv)
    if args.what == "dask":
        args.points = int(args.points)
    result = _overhead(args) if args.what == "overhead" else _dask(args)
    json.dump({"host": cumulus.devices()[0].get("name", "no GPU"), "result": result},
              sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
