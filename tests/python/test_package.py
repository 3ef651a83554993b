"""The package without a GPU: import, argument errors, the "no CUDA driver" path, and the cache
commands (list, import, export, query) on a temporary cache, with the CLI's messages."""

import ctypes
import json
import os
import subprocess

import pytest

import gemvtune
from conftest import gpu_absent_reason

CLI = os.environ.get("GEMVTUNE_CLI")
H200 = "NVIDIA H200/132sm/cc9.0"


def test_import_and_version():
    assert gemvtune.__version__.count(".") == 2
    assert os.path.basename(gemvtune.library_path) == "libgemvtune.so"
    assert {"Runtime", "tune", "query", "list_cache", "export_cache", "import_cache", "peak"} <= set(gemvtune.__all__)


def test_error_classes_map_statuses():
    assert issubclass(gemvtune.InvalidArgument, ValueError)
    assert issubclass(gemvtune.NoGpu, gemvtune.GemvtuneError)
    assert gemvtune.CacheError.status == "GEMVTUNE_ERROR_CACHE"


@pytest.mark.parametrize("args, kwargs, message", [
    ((0, 4096, "bf16"), {}, "shape 0x4096: N and K must be at least 1"),
    ((4096, 4096, "int8"), {}, "unknown dtype 'int8'"),
    ((4096, 4096, "bf16"), {"m": 17}, "outside 1..16"),
    ((4096, 4096, "bf16"), {"m": -1}, "outside 1..16"),
    ((4096, 4000, "bf16"), {"weights": "int4g128"}, "not a multiple of the group size 128"),
    ((4096, 4096, "bf16"), {"weights": "int3"}, "unknown weight format 'int3'"),
    ((4096.5, 4096, "bf16"), {}, "n must be an integer"),
])
def test_check_problem_refuses(args, kwargs, message):
    with pytest.raises(gemvtune.InvalidArgument, match=message):
        gemvtune.check_problem(*args, **kwargs)


def test_check_problem_accepts():
    gemvtune.check_problem(4096, 14336, "bf16")
    gemvtune.check_problem(1024, 4096, "fp16", m=1, weights="fp16")
    gemvtune.check_problem(28672, 4096, "bf16", m=16)
    gemvtune.check_problem(28672, 4096, "bf16", weights="int4g128")
    gemvtune.check_problem(4096, 4096, "fp16", m=4, weights="fp8")


def test_no_cuda_driver():
    why = gpu_absent_reason()
    if why is None:
        pytest.skip("a GPU is present; the GPU tests cover the runtime")
    with pytest.raises(gemvtune.NoGpu, match="no CUDA"):
        gemvtune.Runtime()
    with pytest.raises(gemvtune.NoGpu):
        gemvtune.device_count()
    with pytest.raises(gemvtune.NoGpu):
        gemvtune.tune(["1024x4096"], db="/nonexistent/never-created.sqlite", progress=False)
    with pytest.raises(gemvtune.NoGpu):
        gemvtune.peak()
    with pytest.raises(gemvtune.NoGpu):  # query of this machine's GPU needs the driver
        gemvtune.query("4096x4096")


def test_runtime_argument_errors():
    with pytest.raises(gemvtune.InvalidArgument, match="negative"):
        gemvtune.Runtime(device=-1)
    with pytest.raises(gemvtune.InvalidArgument):
        gemvtune.Runtime(device="0")


def test_tune_argument_errors_come_before_the_gpu(db):
    with pytest.raises(gemvtune.InvalidArgument, match="unknown strategy 'fast'"):
        gemvtune.tune(["4096x4096"], strategy="fast", db=db)
    with pytest.raises(gemvtune.InvalidArgument, match="bad shape '4096x'"):
        gemvtune.tune(["4096x"], db=db)
    with pytest.raises(gemvtune.InvalidArgument, match="unknown preset 'nope'"):
        gemvtune.tune(preset="nope", db=db)
    with pytest.raises(gemvtune.InvalidArgument, match="unknown dtype 'fp8'"):
        gemvtune.tune(["4096x4096"], dtype="fp8", db=db)
    with pytest.raises(gemvtune.InvalidArgument, match="cannot open shape file"):
        gemvtune.tune(shapes_file=db + ".missing", db=db)
    assert not os.path.exists(db), "nothing touched the cache"


def test_shapes_and_presets(tmp_path):
    assert gemvtune.parse_shape("4096x14336") == (4096, 14336)
    with pytest.raises(gemvtune.InvalidArgument, match="bad shape"):
        gemvtune.parse_shape("4096")
    names = [p["name"] for p in gemvtune.presets()]
    assert "llama-3.1-8b" in names
    llama = next(p for p in gemvtune.presets() if p["name"] == "llama-3.1-8b")
    assert {"n": 4096, "k": 14336} in [{"n": s["n"], "k": s["k"]} for s in llama["shapes"]]
    # Each shape names the GEMV before it in a decode step, which tune() ranks finalists after.
    after = {f'{s["n"]}x{s["k"]}': s["after"] for s in llama["shapes"]}
    assert after["6144x4096"] == "4096x14336" and after["128256x4096"] == "4096x14336"
    families = next(p for p in gemvtune.presets() if p["name"] == "families")
    assert all(s["after"] is None for s in families["shapes"])


def test_problem_struct_carries_the_call_before():
    # The ctypes layout of gemvtune_problem matches the library's: after_n x after_k is read
    # where Python writes it (0 x 4096 is refused by name, 0 x 0 is none).
    from gemvtune import _capi
    lib = _capi.lib
    for after, ok in (((4096, 14336), True), (None, True), ((0, 4096), False), ((4096, -1), False)):
        p = _capi.problem(6144, 4096, "bf16", after=after)
        status = lib.gemvtune_problem_check(ctypes.byref(p))
        assert (status == 0) == ok, (after, lib.gemvtune_last_error())
        if not ok:
            assert b"after_n x after_k" in lib.gemvtune_last_error()


def test_default_cache_path_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GEMVTUNE_CACHE", str(tmp_path / "x.sqlite"))
    assert gemvtune.default_cache_path() == str(tmp_path / "x.sqlite")


def _record(template_version, config, n=4096, k=4096, time_us=9.5):
    return {"gpu": {"name": "NVIDIA H200", "sm_count": 132, "cc_major": 9, "cc_minor": 0},
            "n": n, "k": k, "dtype": "bf16", "batch": 1, "template_version": template_version,
            "config": config, "time_us": time_us, "gbps": 3500.0, "pct_of_ceiling": 75.0,
            "strategy": "model", "driver_version": 13000, "nvrtc_version": "13.0", "timestamp": 1764460800,
            "candidates": [{"config": config, "outcome": "passed", "reason": "", "time_us": time_us,
                            "gbps": 3500.0, "pct_of_ceiling": 75.0}]}


def test_cache_round_trip(db, tmp_path):
    empty = gemvtune.list_cache(db)
    assert empty["tuned"] == [] and empty["db"] == db
    assert not os.path.exists(db), "list never creates the cache"
    with pytest.raises(gemvtune.CacheError, match="does not exist"):
        gemvtune.export_cache(db=db)

    # The config the model picks untuned is a valid one to store as "tuned".
    default = gemvtune.query("4096x4096", db=db, gpu=H200)
    assert default["source"] == "default" and default["record"] is None
    doc = {"format": "gemvtune-cache", "format_version": 1,
           "tuned": [_record(empty["template_version"], default["config"])],
           "peaks": [{"gpu": {"name": "NVIDIA H200", "sm_count": 132, "cc_major": 9, "cc_minor": 0},
                      "gbps": 4450.0, "bytes": 4294967296, "driver_version": 13000, "timestamp": 1764460800}]}
    src = tmp_path / "in.json"
    src.write_text(json.dumps(doc))
    stats = gemvtune.import_cache(str(src), db=db)
    assert (stats["added"], stats["replaced"], stats["kept"]) == (1, 0, 0)
    again = gemvtune.import_cache(src, db=db)  # os.PathLike works too; same time: existing kept
    assert (again["added"], again["replaced"], again["kept"]) == (0, 0, 1)

    listed = gemvtune.list_cache(db)
    assert [(r["n"], r["k"], r["config"]) for r in listed["tuned"]] == [(4096, 4096, default["config"])]
    assert "candidates" not in listed["tuned"][0]
    assert listed["peaks"][0]["gbps"] == 4450.0

    exact = gemvtune.query((4096, 4096), "bf16", db=db, gpu=H200)
    assert exact["source"] == "exact" and exact["record"]["time_us"] == 9.5 and exact["batch"] == 1
    batch = gemvtune.query((4096, 4096), "bf16", db=db, gpu=H200, m=8)
    assert batch["batch"] == 8 and batch["source"] != "exact", "a batch-1 entry does not cover M = 8"
    other_gpu = gemvtune.query("4096x4096", db=db, gpu="NVIDIA A100-SXM4-80GB/108sm/cc8.0")
    assert other_gpu["source"] == "default", "entries of another GPU model are never used"

    exported = gemvtune.export_cache(db=db)
    assert exported["format"] == "gemvtune-cache" and len(exported["tuned"][0]["candidates"]) == 1
    out = tmp_path / "out.json"
    summary = gemvtune.export_cache(str(out), db=db)
    assert (summary["tuned"], summary["peaks"]) == (1, 1) and json.loads(out.read_text()) == exported
    with pytest.raises(gemvtune.InvalidArgument, match="is the cache itself"):
        gemvtune.export_cache(db, db=db)

    # A faster entry replaces the stored one on import.
    doc["tuned"][0]["time_us"] = 8.0
    src.write_text(json.dumps(doc))
    assert gemvtune.import_cache(str(src), db=db)["replaced"] == 1
    assert gemvtune.query("4096x4096", db=db, gpu=H200)["record"]["time_us"] == 8.0


def test_fit(db, tmp_path):
    # `gemvtune fit --json` from Python: nothing to fit says why; a cache with measured candidates
    # answers with each constant shipped and fitted, the whole model's error and its picks.
    with pytest.raises(gemvtune.InvalidArgument, match="no cache at"):
        gemvtune.fit(db=db)
    version = gemvtune.list_cache(db)["template_version"]
    doc = {"format": "gemvtune-cache", "format_version": 2, "peaks": [],
           "tuned": [_record(version, "t128_r2_kw4_v16_u2_sk1_cs_pdl", time_us=9.5),
                     _record(version, "t128_r1_kw1_v16_u8_sk1_cs", n=1024, time_us=3.1)]}
    src = tmp_path / "in.json"
    src.write_text(json.dumps(doc))
    gemvtune.import_cache(src, db=db)
    report = gemvtune.fit(db=db)
    assert report["gpu"] == H200 and report["rows"] == 2 and report["problems"] == 2
    assert [c["name"] for c in report["constants"]] == [
        "cuda_core_issue_share", "quantized_issue_share", "quantized_issue_warps", "launch_us", "pdl_launch_us"]
    assert report["picks_over_best_shipped"] == 1.0, "one candidate a problem: the model picks it"
    with pytest.raises(gemvtune.InvalidArgument, match="no measured candidates of NVIDIA A100"):
        gemvtune.fit(db=db, gpu="NVIDIA A100/108sm/cc8.0")


def test_cache_errors(db, tmp_path):
    with pytest.raises(gemvtune.InvalidArgument, match="cannot open"):
        gemvtune.import_cache(str(tmp_path / "missing.json"), db=db)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "gemvtune-cache", "format_version": 1, "peaks": []}')
    with pytest.raises(gemvtune.InvalidArgument, match="tuned: missing"):
        gemvtune.import_cache(str(bad), db=db)
    assert not os.path.exists(db), "a refused import touches no cache"
    not_a_cache = tmp_path / "text.sqlite"
    not_a_cache.write_text("this is not SQLite")
    with pytest.raises(gemvtune.CacheError):
        gemvtune.list_cache(str(not_a_cache))
    assert not_a_cache.read_text() == "this is not SQLite", "a foreign file is left as it was"
    with pytest.raises(gemvtune.InvalidArgument, match="bad GPU 'H200'"):
        gemvtune.query("4096x4096", db=db, gpu="H200")


@pytest.mark.skipif(not CLI, reason="GEMVTUNE_CLI (the gemvtune command of the same build) is not set")
@pytest.mark.parametrize("cli_args, call", [
    (["tune", "--shape", "4096x4096", "--strategy", "fast"], lambda db: gemvtune.tune(["4096x4096"], strategy="fast", db=db)),
    (["tune", "--preset", "nope"], lambda db: gemvtune.tune(preset="nope", db=db)),
    (["query", "--shape", "40x96x"], lambda db: gemvtune.query("40x96x", db=db, gpu=H200)),
    (["export"], lambda db: gemvtune.export_cache(db=db)),
    (["import", "/nonexistent/in.json"], lambda db: gemvtune.import_cache("/nonexistent/in.json", db=db)),
])
def test_messages_match_the_cli(db, cli_args, call):
    with pytest.raises(gemvtune.GemvtuneError) as raised:
        call(db)
    run = subprocess.run([CLI, *cli_args, "--db", db], capture_output=True, text=True)
    assert run.returncode != 0
    assert str(raised.value) in run.stderr, f"CLI said: {run.stderr!r}"
