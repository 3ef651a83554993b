"""The tuning cache's offline side from Python: the CLI's tune, query, list, export, import and
peak, with the same meaning, answers (the documents ``--json`` prints, as dicts) and error
messages (raised as gemvtune.errors exceptions).

``db`` is the cache file (a str, bytes or os.PathLike, as every path here); None means the
CLI's default ($GEMVTUNE_CACHE, else $XDG_CACHE_HOME/gemvtune/gemvtune.sqlite, else
~/.cache/gemvtune/gemvtune.sqlite).
"""

import ctypes
import json
import sys
import warnings

from . import _capi, errors

_lib = _capi.lib

DEFAULT_PRESET = "llama-3.1-8b"


def default_cache_path():
    """The cache file that db=None means."""
    return _capi.call_text(_lib.gemvtune_default_cache_path)


def device_count():
    """CUDA devices on this machine; raises NoGpu without a driver or GPU."""
    n = ctypes.c_int()
    _capi.check(_lib.gemvtune_device_count(ctypes.byref(n)))
    return n.value


def presets():
    """The model presets `tune --preset` knows: [{"name", "description", "shapes": [{"n", "k",
    "layers", "after"}]}]; "after" ("NxK" or None) is the GEMV before that shape in a decode step."""
    return _capi.call_json(_lib.gemvtune_presets)


def parse_shape(text):
    """"4096x14336" -> (4096, 14336), with the CLI's errors."""
    n, k = ctypes.c_int64(), ctypes.c_int64()
    _capi.check(_lib.gemvtune_parse_shape(_capi.text(text, "shape"), ctypes.byref(n), ctypes.byref(k)))
    return n.value, k.value


def _shape(value):
    if isinstance(value, str):
        return parse_shape(value)
    try:
        n, k = value
    except (TypeError, ValueError):
        raise errors.InvalidArgument(f"bad shape {value!r}: expected 'NxK' or (n, k)") from None
    return n, k


def _device(value, name):
    return _capi.integer(value, name, 0, _capi.INT_MAX)  # a C int


def _warn_skipped(doc, what):
    rows = doc.get("skipped") or []
    if rows:
        warnings.warn(f"{len(rows)} row(s) of {doc['db']} that this build cannot use {what}: " + "; ".join(rows[:10]),
                      RuntimeWarning, stacklevel=3)
    return doc


def list_cache(db=None):
    """`gemvtune list --json`: {"db", "template_version", "tuned": [...], "peaks": [...],
    "skipped": [...]}. A missing cache file lists nothing. Rows this build cannot use are
    left out and named in "skipped" (with a warning, as the CLI warns on stderr)."""
    return _warn_skipped(_capi.call_json(_lib.gemvtune_cache_list, _capi.text(db, "db")), "were not listed")


def export_cache(out=None, db=None):
    """`gemvtune export`: with out=None, the export document (every winner with its
    candidates, and the read ceilings); otherwise writes it to the file ``out`` as `gemvtune
    export --out` does (a regular file replaced atomically, keeping its mode; a symlink, FIFO or
    device written through; the cache's own files refused) and returns {"db", "out", "tuned", "peaks", "skipped"} (entries
    written, rows this build cannot use and so left out, with a warning)."""
    doc = _capi.call_json(_lib.gemvtune_cache_export, _capi.text(db, "db"), _capi.text(out, "out"))
    return _warn_skipped(doc, "were left out of the export") if out is not None else doc


def import_cache(file, db=None):
    """`gemvtune import FILE`: merges an export into the cache (created when missing); for a key
    in both the faster entry stays, for a GPU's read ceiling the higher. Returns {"db", "file",
    "added", "replaced", "kept", "peaks_added", "peaks_raised", "peaks_kept"}."""
    return _capi.call_json(_lib.gemvtune_cache_import, _capi.text(db, "db"), _capi.text(file, "file"))


def query(shape, dtype="bf16", *, m=1, db=None, device=0, gpu=None):
    """`gemvtune query --json`: the config the runtime would use for shape ('NxK' or (n, k))
    at batch m: {"shape", "batch", "dtype", "gpu", "template_version", "config", "source"
    ("exact", "nearest", "default"), "source_text", "db", "record", "declined" (a nearest
    shape's entry the default replaced, or None)}. gpu: a GPU model as
    list_cache() shows it, "NVIDIA H200/132sm/cc9.0", asks about that model without a GPU;
    otherwise the GPU at ``device`` is read (needs the driver)."""
    n, k = _shape(shape)
    p = _capi.problem(n, k, dtype, m)
    return _capi.call_json(_lib.gemvtune_query, _capi.text(db, "db"), ctypes.byref(p), _device(device, "device"),
                           _capi.text(gpu, "gpu"))


def peak(device=0, db=None):
    """`gemvtune peak`: measures the GPU's read ceiling (a streaming read of 4 GiB) and stores
    it in the cache: {"db", "gpu", "gbps", "bytes", "runs", "previous_gbps", "peak"}."""
    return _capi.call_json(_lib.gemvtune_peak, _capi.text(db, "db"), _device(device, "device"))


def fit(db=None, gpu=None):
    """`gemvtune fit --json`: the model's constants refitted to one GPU's measured candidates in
    the cache, beside the shipped ones (needs no GPU, changes nothing: the constants are
    compiled in). gpu: a GPU model as list_cache() shows it, e.g. "NVIDIA H200/132sm/cc9.0";
    None: the cache's only one. Returns {"db", "gpu", "rows", "problems", "constants": [...],
    "rms_log_error_shipped", "rms_log_error_fitted", "picks_over_best_shipped",
    "picks_over_best_fitted", ...}; InvalidArgument when there is nothing to fit."""
    return _capi.call_json(_lib.gemvtune_fit, _capi.text(db, "db"), _capi.text(gpu, "gpu"))


def _print_event(event):
    kind = event.get("event")
    if kind == "start" and event["jobs"]:
        print(f"tuning {event['jobs']} shape(s) with the {event['strategy']} strategy on {len(event['devices'])} "
              f"GPU(s), at most {event['planned']} candidates; results go to {event['db']}", file=sys.stderr)
    elif kind == "outcome":
        name = f"{event['shape']} {event['dtype']}" if event.get("batch", 1) == 1 else \
            f"{event['batch']}x{event['shape']} {event['dtype']}"
        if event["status"] == "failed":
            line = f"{name}: FAILED: {event['error']}"
        elif event["status"] == "skipped":
            line = f"{name}: already tuned ({event['config']}, {event['time_us']:.1f} us), skipped"
        else:
            line = (f"{name}: {event['config']} {event['time_us']:.2f} us, {event['gbps']:.0f} GB/s "
                    f"({event['pct_of_ceiling']:.1f}% of ceiling); {event['measured']}/{event['space']} measured "
                    f"in {event['seconds']:.1f} s on GPU {event['device']}")
        print(line, file=sys.stderr)


def tune(shapes=None, *, preset=None, shapes_file=None, dtype="bf16", batch=1, strategy="model", db=None,
         force=False, devices=(0,), progress=True, check=True, alone=False):
    """`gemvtune tune --json`: tunes shapes on the GPU and stores each winner in the cache.

    shapes: 'NxK' strings or (n, k) pairs, or one 'NxK' string; preset: a preset name or a list of them;
    shapes_file: a file of NxK lines. With none of the three: the llama-3.1-8b preset.
    dtype: one dtype or a list; batch: one M (1..16) or a list. strategy: "model" or "exhaustive". Shapes already tuned are
    skipped unless force. devices: GPU ordinals to spread the shapes over, or "all".
    progress: True prints the CLI's lines on stderr; a callable gets every event dict
    (start, progress after each candidate, outcome); False prints nothing. A preset's shapes
    are ranked, as by `gemvtune tune --preset`, right after the call before them in the model's
    decode step (its "after"); alone=True ranks them by their back-to-back time only (`--alone`).

    Returns {"db", "strategy", "template_version", "tuned", "skipped", "failed", "seconds", "phases",
    "shapes": [...]}. When a shape failed and check is True, raises TuneFailed (its
    ``result`` is that document; the other shapes were stored).
    """
    jobs = []  # (n, k, the call before in a decode step or None)
    # One string is one shape, as one preset name is one preset (iterating it would parse "4").
    for s in [shapes] if isinstance(shapes, str) else (shapes if shapes is not None else []):
        jobs.append((*_shape(s), None))

    def preset_jobs(name):
        # A preset's shapes run after the call before them in its decode step, as `tune
        # --preset` ranks them, unless alone.
        return [(s["n"], s["k"], None if alone or not s.get("after") else _shape(s["after"]))
                for s in _capi.call_json(_lib.gemvtune_find_preset, name)["shapes"]]

    for name in [preset] if isinstance(preset, str) else (preset or []):
        jobs += preset_jobs(_capi.text(name, "preset"))
    if shapes_file is not None:
        jobs += [(s["n"], s["k"], None) for s in _capi.call_json(_lib.gemvtune_read_shape_file,
                                                                      _capi.text(shapes_file, "shapes_file"))]
    # Only where none of the three is given: an empty list (say, a filter that kept nothing) is
    # "no shapes to tune", as an empty preset list or shape file is, not the default preset.
    if shapes is None and preset is None and shapes_file is None:
        jobs = preset_jobs(DEFAULT_PRESET.encode())
    dtypes = [dtype] if isinstance(dtype, str) or not hasattr(dtype, "__iter__") else list(dtype)
    batches = list(batch) if hasattr(batch, "__iter__") else [batch]
    problems = [_capi.problem(n, k, t, m, after=after) for n, k, after in jobs for m in batches for t in dtypes]
    array = (_capi.Problem * len(problems))(*problems)
    if devices == "all":
        devices = list(range(device_count()))
    if isinstance(devices, int):
        devices = [devices]
    devices = [_device(d, f"devices[{i}]") for i, d in enumerate(devices)]

    on_event = _print_event if progress is True else progress or None
    failures = []

    def callback(text, _user):
        try:
            on_event(json.loads(text.decode()))
        except BaseException as e:  # never unwind into C; reported after the run
            failures.append(e)

    options = _capi.TuneOptions()
    options.struct_size = ctypes.sizeof(_capi.TuneOptions)
    options.db = _capi.text(db, "db")
    options.strategy = _capi.text(strategy, "strategy")
    device_array = (ctypes.c_int * len(devices))(*devices)
    options.devices = ctypes.cast(device_array, ctypes.POINTER(ctypes.c_int)) if devices else None
    options.device_count = len(devices)
    c_callback = _capi.TUNE_CALLBACK(callback) if on_event else _capi.TUNE_CALLBACK()
    options.on_event = c_callback
    options.force = 1 if force else 0
    result = _capi.call_json(_lib.gemvtune_tune, array, len(problems), ctypes.byref(options))
    if failures:
        raise failures[0]
    if check and result["failed"]:
        lines = [f"{s['shape']} {s['dtype']}: {s['error']}" for s in result["shapes"] if s["status"] == "failed"]
        raise errors.TuneFailed(f"{result['failed']} of {len(result['shapes'])} shape(s) failed to tune: "
                                + "; ".join(lines), result)
    return result
