"""A roofline-style picture of a tuning cache: every tuned winner of one GPU as a point at
(bytes moved per call, achieved GB/s), under the GPU's read ceiling (its stored peak) drawn as a
horizontal line; one panel per (dtype, weight format), M told apart by color, and cuBLAS's
points of ``gemvtune bench --json`` files beside them.

    python -m gemvtune.roofline --db CACHE.sqlite [--bench B.json ...] --out roofline.png [--gpu KEY]

The bytes of a point are its gbps x time_us (the bytes the tuner or bench counted for that
call), so quantized formats and cuBLAS's dense weights each sit where their own traffic puts
them. Needs matplotlib (``pip install matplotlib``; drawn with the Agg backend, no display).
Errors (missing or empty cache, no entry with a positive rate and time, unknown GPU, unreadable
bench file, an --out extension matplotlib cannot write) print one line on stderr and exit with
status 2.
"""

import argparse
import json
import math
import os
import sys

from . import errors, offline


class RooflineError(Exception):
    """An input problem reported as one line and exit status 2."""


def gpu_key(gpu):
    """The GPU model as `gemvtune list` shows it: "NVIDIA H200/132sm/cc9.0"."""
    return f"{gpu['name']}/{gpu['sm_count']}sm/cc{gpu['cc_major']}.{gpu['cc_minor']}"


def _bytes(gbps, us):
    return gbps * us * 1e3  # GB/s x us = 1e9 B/s x 1e-6 s


def load_cache(db, gpu=None):
    """The points of one GPU's winners in the cache ``db``: (gpu key, peak GB/s or None,
    [{"dtype", "weights", "batch", "n", "k", "bytes", "gbps", "time_us"}]). gpu: a key as
    gpu_key() writes it; needed only when the cache holds more than one GPU model."""
    if not os.path.exists(db):
        raise RooflineError(f"cache {db} does not exist")
    try:
        listed = offline.list_cache(db)
    except errors.GemvtuneError as e:
        raise RooflineError(str(e)) from None
    tuned = listed.get("tuned") or []
    if not tuned:
        raise RooflineError(f"cache {db} has no tuned entries to plot (run `gemvtune tune` or import an export)")
    keys = sorted({gpu_key(r["gpu"]) for r in tuned})
    if gpu is None:
        if len(keys) > 1:
            raise RooflineError(f"cache {db} holds entries of {len(keys)} GPU models; pick one with --gpu: "
                                + ", ".join(keys))
        gpu = keys[0]
    elif gpu not in keys:
        raise RooflineError(f"no tuned entries of GPU '{gpu}' in {db}; it holds: " + ", ".join(keys))
    peak = None
    for p in listed.get("peaks") or []:
        if gpu_key(p["gpu"]) == gpu:
            peak = p["gbps"]
    points = []
    for r in tuned:
        if gpu_key(r["gpu"]) != gpu or not (r["gbps"] > 0 and r["time_us"] > 0):
            continue
        points.append({"dtype": r["dtype"], "weights": r.get("weights", "dense"), "batch": r.get("batch", 1),
                       "n": r["n"], "k": r["k"], "gbps": r["gbps"], "time_us": r["time_us"],
                       "bytes": _bytes(r["gbps"], r["time_us"])})
    return gpu, peak, points


def load_bench(path, gpu):
    """cuBLAS's points of a `gemvtune bench --json` file: (ceiling GB/s or None, [points as
    load_cache's]). The file's GPU must be the plotted GPU's model name."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise RooflineError(f"cannot read bench file {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise RooflineError(f"bench file {path} is not JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("shapes"), list) or "dtype" not in doc:
        raise RooflineError(f"bench file {path} is not the output of `gemvtune bench --json` "
                            "(no top-level dtype and shapes)")
    name = gpu.split("/")[0]
    if doc.get("gpu") not in (None, name):
        raise RooflineError(f"bench file {path} was measured on '{doc['gpu']}', the plot is of '{gpu}'")
    points = []
    for s in doc["shapes"]:
        try:
            n, k = (int(v) for v in str(s["shape"]).split("x"))
            for v in s["variants"]:
                if v.get("variant") != "cuBLAS" or not (v["graph_gbps"] > 0 and v["graph_us"] > 0):
                    continue
                points.append({"dtype": doc["dtype"], "weights": doc.get("weights", "dense"),
                               "batch": s.get("batch", 1), "n": n, "k": k, "gbps": v["graph_gbps"],
                               "time_us": v["graph_us"], "bytes": _bytes(v["graph_gbps"], v["graph_us"])})
        except (KeyError, TypeError, ValueError) as e:
            raise RooflineError(f"bench file {path}: bad entry for shape {s.get('shape') if isinstance(s, dict) else s!r}"
                                f" ({type(e).__name__}: {e})") from None
    ceiling = doc.get("ceiling_gbps")
    return (ceiling if isinstance(ceiling, (int, float)) and ceiling > 0 else None), points


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise RooflineError("the roofline picture needs matplotlib, which is not installed: "
                            "pip install matplotlib (or apt-get install python3-matplotlib)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _columns(points):
    """Shapes grouped by bytes per call: shapes within 6% of each other share a column of the
    log axis (14336x4096 and 4096x14336), [[(n, k), ...], ...] in byte order."""
    first = {}
    for p in points:
        nk = (p["n"], p["k"])
        first[nk] = min(first.get(nk, p["bytes"]), p["bytes"])
    columns = []
    for nk in sorted(first, key=lambda t: (first[t], t)):
        if columns and first[nk] <= first[columns[-1][0]] * 1.06:
            columns[-1].append(nk)
        else:
            columns.append([nk])
    return columns


def _column_shifts(points):
    """{(n, k): factor on its x}: shapes of one column drawn side by side, 5% apart, so that
    neither hides the other."""
    shift = {}
    for column in _columns(points):
        for i, nk in enumerate(column):
            shift[nk] = 1.05 ** (i - (len(column) - 1) / 2)
    return shift


def _label_places(points, shift):
    """{(n, k): ((x, lowest GB/s), rank in its column)}: where each shape's one label goes."""
    places = {}
    for column in _columns(points):
        for rank, nk in enumerate(column):
            sel = [p for p in points if (p["n"], p["k"]) == nk]
            lows = [min(p["gbps"] for p in points if (p["n"], p["k"]) == other) for other in column]
            places[nk] = ((min(p["bytes"] for p in sel) * shift[nk], min(lows)), rank)
    return places


def render(out, gpu, peak, points, cublas=(), bench_ceiling=None, title=None):
    """Draws the picture into the file ``out`` (its format from the extension: .png, .svg, .pdf).
    Raises RooflineError where there is nothing to draw or ``out``'s format is not one
    matplotlib writes, before drawing anything."""
    if not points and not cublas:
        # load_cache keeps only entries with a positive rate and time: a cache whose entries
        # for this GPU all have gbps 0 (the import allows it) leaves none, and no panels.
        raise RooflineError(f"no entries of {gpu} with a positive rate and time to plot")
    plt = _pyplot()
    from matplotlib.lines import Line2D

    # savefig would raise ValueError for an extension it has no writer for, after the drawing;
    # a name without one is written as PNG under that very name.
    from matplotlib.backend_bases import FigureCanvasBase
    ext = os.path.splitext(os.fsdecode(out))[1][1:]
    formats = FigureCanvasBase.get_supported_filetypes()
    if ext and ext.lower() not in formats:
        raise RooflineError(f"cannot write {out}: .{ext} is not a picture format matplotlib writes (it writes "
                            + ", ".join("." + f for f in sorted(formats)) + ")")

    panels = sorted({(p["dtype"], p["weights"]) for p in points} | {(p["dtype"], p["weights"]) for p in cublas},
                    key=lambda t: (t[0], t[1] != "dense", t[1]))  # dense first
    batches = sorted({p["batch"] for p in points} | {p["batch"] for p in cublas})
    cmap = plt.get_cmap("tab10")
    color = {m: cmap(i % 10) for i, m in enumerate(batches)}
    cols = min(len(panels), 2)
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(7.5 * cols, 5.2 * rows), squeeze=False)
    all_gbps = [p["gbps"] for p in list(points) + list(cublas)] + [c for c in (peak, bench_ceiling) if c]
    top = max(all_gbps) * 1.15
    for ax, (dtype, weights) in zip(axes.flat, panels):
        mine = [p for p in points if (p["dtype"], p["weights"]) == (dtype, weights)]
        theirs = [p for p in cublas if (p["dtype"], p["weights"]) == (dtype, weights)]
        shift = _column_shifts(mine + theirs)
        x_of = lambda p: p["bytes"] * shift[(p["n"], p["k"])]  # noqa: E731
        # A shape's tuned points, M = 1 to 16, joined by a thin line: how its rate falls with M.
        for nk in sorted({(p["n"], p["k"]) for p in mine}):
            sel = sorted((p for p in mine if (p["n"], p["k"]) == nk), key=lambda p: p["batch"])
            if len(sel) > 1:
                ax.plot([x_of(p) for p in sel], [p["gbps"] for p in sel], color="0.6", linewidth=0.8, zorder=2)
        for m in batches:
            sel = [p for p in mine if p["batch"] == m]
            if sel:
                ax.scatter([x_of(p) for p in sel], [p["gbps"] for p in sel], marker="o", s=46,
                           color=color[m], edgecolors="black", linewidths=0.5, zorder=3)
            sel = [p for p in theirs if p["batch"] == m]
            if sel:
                ax.scatter([x_of(p) for p in sel], [p["gbps"] for p in sel], marker="x", s=52,
                           color=color[m], linewidths=1.6, zorder=3)
        # One label per shape (the colours tell M apart), under its lowest point; shapes that share
        # a column stack their labels.
        for (n, k), (below, rank) in _label_places(mine + theirs, shift).items():
            ax.annotate(f"{n}x{k}", (below[0], below[1]), textcoords="offset points",
                        xytext=(0, -11 - 9 * rank), ha="center", fontsize=7, color="0.25")
        if peak:
            ax.axhline(peak, color="crimson", linestyle="-", linewidth=1.5, zorder=2)
            ax.annotate(f"read ceiling {peak:.0f} GB/s", (0.01, peak), xycoords=("axes fraction", "data"),
                        xytext=(0, 3), textcoords="offset points", fontsize=8, color="crimson")
        elif bench_ceiling:
            ax.axhline(bench_ceiling, color="crimson", linestyle="--", linewidth=1.2, zorder=2)
            ax.annotate(f"read ceiling {bench_ceiling:.0f} GB/s (bench)", (0.01, bench_ceiling),
                        xycoords=("axes fraction", "data"), xytext=(0, 3), textcoords="offset points", fontsize=8,
                        color="crimson")
        ax.set_xscale("log")
        xs = [p["bytes"] for p in mine + theirs]
        ax.set_xlim(min(xs) / 1.6, max(xs) * 2.2)  # room for the labels on the right
        ax.set_ylim(0, top)
        ax.set_xlabel("bytes moved per call")
        ax.set_ylabel("achieved GB/s")
        ax.set_title(f"{dtype} activations, {weights} weights", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles = [Line2D([], [], marker="o", linestyle="", color="0.5", markeredgecolor="black", label="gemvtune (tuned)")]
    if cublas:
        handles.append(Line2D([], [], marker="x", linestyle="", color="0.5", label="cuBLAS (bench)"))
    handles += [Line2D([], [], marker="s", linestyle="", color=color[m], label=f"M = {m}") for m in batches]
    if peak or bench_ceiling:
        handles.append(Line2D([], [], color="crimson", label="read ceiling"))
    axes.flat[0].legend(handles=handles, loc="lower right", fontsize=8, framealpha=0.9)
    fig.suptitle(title or f"gemvtune roofline: {gpu}", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97 if rows == 1 else 0.98))
    # An explicit format: without one, a name with no extension would be written as name.png
    # while main() reports the name it was given.
    fig.savefig(out, dpi=120, format=ext.lower() or "png")
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m gemvtune.roofline",
        description="Plot a tuning cache's winners as bytes per call against achieved GB/s under the GPU's read "
                    "ceiling, one panel per (dtype, weight format); cuBLAS points from `gemvtune bench --json` files.")
    parser.add_argument("--db", required=True, help="the cache file (gemvtune.sqlite)")
    parser.add_argument("--bench", nargs="+", default=[], metavar="FILE.json",
                        help="`gemvtune bench --json` output(s) whose cuBLAS timings are plotted beside")
    parser.add_argument("--out", required=True, help="the picture to write (.png, .svg, .pdf)")
    parser.add_argument("--gpu", help='the GPU model as `gemvtune list` shows it, "NVIDIA H200/132sm/cc9.0"; needed '
                                      "when the cache holds more than one")
    args = parser.parse_args(argv)
    try:
        gpu, peak, points = load_cache(args.db, args.gpu)
        cublas, ceilings = [], []
        for path in args.bench:
            ceiling, pts = load_bench(path, gpu)
            cublas += pts
            if ceiling:
                ceilings.append(ceiling)
        render(args.out, gpu, peak, points, cublas, max(ceilings) if ceilings else None)
    except RooflineError as e:
        print(f"gemvtune.roofline: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"gemvtune.roofline: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}: {len(points)} tuned entries of {gpu}"
          + (f", {len(cublas)} cuBLAS points" if args.bench else "")
          + (f", read ceiling {peak:.0f} GB/s" if peak else ", no stored read ceiling"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
