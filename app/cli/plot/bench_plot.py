#!/usr/bin/python3
"""Draws the PNG plots of a cumulus benchmark CSV with matplotlib (cumulus-cli bench plot).

One figure per sweep (a family of cases). A sweep whose cases are values of one parameter
(sizes, k, epsilon...) is drawn as lines over that parameter, one line per method and dataset,
never joining two datasets; a sweep of separate datasets is drawn as grouped horizontal bars,
one group per case. Times are on log axes (methods differ by decades), each point or bar with
its fastest-to-slowest repeat as a whisker; methods whose result differs from the reference are
hatched and marked in the legend.

Usage: bench_plot.py CSV OUT_DIR PREFIX   (prints "wrote PATH" per figure; exit 3 without
matplotlib, 2 on a bad CSV)
"""
import csv
import math
import os
import re
import sys

FAMILIES = {
    "cluster": "Euclidean clustering",
    "segment": "RDP segmentation",
    "features": "Normals and feature histograms",
    "icp": "ICP registration",
    "register": "Global registration",
    "filter": "Filters",
    "ground": "Ground removal",
    "pipeline": "Scan to objects",
    "sequence": "Sequences",
}
AXIS_NAMES = {"size": "points", "rows": "image rows", "real": "points"}


def read_rows(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        need = {"sweep", "case", "x", "method", "median_ms", "min_ms", "max_ms", "agreement"}
        if not reader.fieldnames or not need.issubset(reader.fieldnames):
            raise ValueError("not a cumulus benchmark CSV (no %s)" % ", ".join(sorted(need)))
        rows = []
        for r in reader:
            try:
                r["x"] = float(r["x"])
                for k in ("median_ms", "min_ms", "max_ms"):
                    r[k] = float(r[k])
            except ValueError:
                continue
            if r["median_ms"] > 0:  # failed or skipped runs have no time to draw
                rows.append(r)
        return rows


def as_number(text):
    try:
        return float(text)
    except ValueError:
        return None


def split_case(label, x):
    """(dataset, True) when the case label ends in its sweep value: "bunny pfh k=16" at 16."""
    head, _, last = label.rpartition(" ")
    value = as_number(last.split("=")[-1])
    if value is not None and x > 0 and math.isclose(value, x, rel_tol=1e-6):
        return head, True
    return label, False


def differs(row):
    return row["agreement"].upper().startswith("DIFF")


def method_colours(rows):
    import matplotlib

    palette = matplotlib.colormaps["tab10"].colors + matplotlib.colormaps["Dark2"].colors
    methods = list(dict.fromkeys(r["method"] for r in rows))
    return {m: ("black" if m == "cpu" else palette[i % len(palette)]) for i, m in enumerate(methods)}


def whisker(rows):
    lo = [max(r["median_ms"] - (r["min_ms"] or r["median_ms"]), 0) for r in rows]
    hi = [max((r["max_ms"] or r["median_ms"]) - r["median_ms"], 0) for r in rows]
    return [lo, hi]


def plot_lines(ax, rows, colours, sweep):
    styles = ["-", "--", ":", "-."]
    datasets = list(dict.fromkeys(split_case(r["case"], r["x"])[0] for r in rows))
    for method, colour in colours.items():
        for d, dataset in enumerate(datasets):
            pts = sorted((r for r in rows if r["method"] == method
                          and split_case(r["case"], r["x"])[0] == dataset), key=lambda r: r["x"])
            if not pts:
                continue
            name = method if len(datasets) == 1 else "%s, %s" % (method, dataset)
            if any(differs(r) for r in pts):
                name += " (differs)"
            ax.errorbar([r["x"] for r in pts], [r["median_ms"] for r in pts], yerr=whisker(pts),
                        color=colour, linestyle=styles[d % len(styles)], marker="o", markersize=4,
                        capsize=2, label=name)
    xs = [r["x"] for r in rows]
    if max(xs) / min(xs) >= 8:
        ax.set_xscale("log")
    ax.set_yscale("log")
    first = rows[0]["case"]
    key = re.search(r"(\w+)=[\d.]+$", first)
    ax.set_xlabel(key.group(1) if key else AXIS_NAMES.get(sweep, sweep))
    ax.set_ylabel("median ms (log scale)")
    ax.grid(True, which="major", alpha=0.4)


def plot_bars(ax, rows, colours):
    settings = {}
    for r in rows:  # a case measured at several settings is one bar group per setting
        settings.setdefault(r["case"], set()).add(r["x"])

    def group(r):
        return r["case"] + (" (%g)" % r["x"] if len(settings[r["case"]]) > 1 else "")

    cases = list(dict.fromkeys(group(r) for r in rows))
    methods = list(colours)
    height = 0.8 / len(methods)
    drawn = set()
    for m, method in enumerate(methods):
        for c, case in enumerate(cases):
            r = next((r for r in rows if r["method"] == method and group(r) == case), None)
            if r is None:
                continue
            y = c - 0.4 + (m + 0.5) * height  # the first method on top of its group
            name = method + (" (differs)" if differs(r) else "")
            ax.barh(y, r["median_ms"], height=height * 0.9, xerr=whisker([r]),
                    color=colours[method], hatch="//" if differs(r) else None,
                    edgecolor="red" if differs(r) else "white", capsize=2,
                    label=None if name in drawn else name, log=True)
            drawn.add(name)
    ax.set_yticks(range(len(cases)), cases)
    ax.invert_yaxis()
    ax.set_xlabel("median ms (log scale)")
    ax.grid(True, axis="x", which="major", alpha=0.4)


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    path, out_dir, prefix = argv[1:]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("python3-matplotlib is not installed (apt install python3-matplotlib)",
              file=sys.stderr)
        return 3
    try:
        rows = read_rows(path)
    except (OSError, ValueError, csv.Error) as e:
        print("%s: %s" % (path, e), file=sys.stderr)
        return 2
    if not rows:
        print("%s: no rows with times to plot" % path, file=sys.stderr)
        return 2
    colours = method_colours(rows)
    family = FAMILIES.get(prefix, prefix)
    for sweep in dict.fromkeys(r["sweep"] for r in rows):
        sub = [r for r in rows if r["sweep"] == sweep]
        used = {m: c for m, c in colours.items() if any(r["method"] == m for r in sub)}
        lines = all(split_case(r["case"], r["x"])[1] for r in sub) and \
            len({r["x"] for r in sub}) > 1
        if lines:
            fig, ax = plt.subplots(figsize=(9, 5.5))
            plot_lines(ax, sub, used, sweep)
        else:
            bars = len({r["case"] for r in sub}) * len(used)
            fig, ax = plt.subplots(figsize=(9, 1.5 + 0.22 * bars))
            plot_bars(ax, sub, used)
        ax.set_title("%s: %s" % (family, sweep))
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", frameon=False)
        fig.tight_layout()
        target = os.path.join(out_dir, "%s_%s.png" % (prefix, sweep))
        partial = target + ".part"
        fig.savefig(partial, format="png", dpi=100)
        plt.close(fig)
        os.replace(partial, target)  # never a half-written PNG under the final name
        print("wrote " + target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
