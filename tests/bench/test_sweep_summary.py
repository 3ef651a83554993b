"""scripts/sweep_summary.py without a GPU: the table of a recorded `gemvtune bench --json` file
(bench/results/raw, H200, M = 1 to 16) and of small made-up documents that miss each of issue
14's bars. Run by CTest as `sweep_summary` (tests/python/tests.cmake); standard library and
pytest only."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "sweep_summary.py")
RECORDED = os.path.join(ROOT, "bench", "results", "raw", "83ba666_bench_batch_bf16.json")

spec = importlib.util.spec_from_file_location("sweep_summary", SCRIPT)
sweep_summary = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sweep_summary)


def run(*args):
    r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def variant(name, us, gbps=1000.0, ceiling=4541.0):
    return {"variant": name, "config": "x", "graph_us": us, "graph_gbps": gbps, "pct_of_ceiling": 100 * gbps / ceiling,
            "graph_vs_cublas": 1.0, "eager_us": us, "eager_gbps": gbps, "eager_vs_cublas": 1.0}


def entry(shape, tuned_us, cublas_us, default_us=None, tuned_gbps=1000.0, batch=1):
    vs = [variant("tuned", tuned_us, tuned_gbps), variant("cuBLAS", cublas_us)]
    if default_us is not None:
        vs.insert(1, variant("default", default_us))
    return {"shape": shape, "batch": batch, "source": "exact", "variants": vs}


def document(*entries, dtype="bf16"):
    return {"gpu": "NVIDIA H200", "dtype": dtype, "weights": "dense", "ceiling_gbps": 4541.0, "shapes": list(entries)}


def write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_recorded_h200_bench_file():
    rc, out, err = run(RECORDED)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("| shape (N x K) | MiB | M | tuned us | cuBLAS us | tuned / cuBLAS | untuned / cuBLAS")
    assert "| 4096x4096 | 32.0 | 1 | 9.04 | 12.79 | 1.42x | 1.33x | 1.33x | 81.8 |  |" in lines
    assert "| 4096x4096 | 32.0 | 2 | 10.72 | 12.73 | 1.19x | 0.91x | 0.91x | 69.0 | **untuned, empty-cache** |" in lines
    assert "| 128256x4096 | 1002 | 1 | 231.07 | 247.89 | 1.07x | 1.04x | 1.04x | 100.2 |  |" in lines
    assert sum(1 for line in lines if line.startswith("| ")) == 2 + 35  # header, rule, one row per (shape, M)
    # The script's geometric means are bench's own (same ratios, graph mode).
    with open(RECORDED) as f:
        recorded = json.load(f)
    for g in recorded["geomeans"]:
        assert (f"M = {g['batch']}: 7 rows, geometric mean tuned {g['graph_vs_cublas']:.3f}x cuBLAS, "
                f"untuned {g['default_graph_vs_cublas']:.3f}x") in lines
    assert "bar few-row (N < 64, K ~ 8192 (bf16) <= 2.5 us): no row of that kind" in lines
    assert any(line.startswith("bar untuned (>= 0.95x cuBLAS untuned): 19/35 rows meet it; missed by") for line in lines)
    assert run(RECORDED, "--check")[0] == 1  # M = 16 rows miss 1.05x tuned


def test_each_bar_is_marked(tmp_path):
    doc = document(
        entry("4096x4096", 9.0, 12.0, 10.0),                           # meets every bar
        entry("3584x4096", 10.0, 10.3, 10.0),                          # tuned 1.03x
        entry("512x3584", 2.0, 3.0, 3.3),                              # untuned 0.91x
        entry("32x8192", 2.6, 4.0, 2.7),                               # few rows, long K: 2.6 us > 2.5
        entry("16x14336", 2.6, 4.0, 2.7),                              # K beyond ~8192: not that bar
        entry("4097x4099", 9.0, 12.0, 10.0, tuned_gbps=0.75 * 4541),  # K = 3 mod 8, 33.6 MB, 75%
        entry("4096x4093", 9.0, 12.0, 10.0, tuned_gbps=0.70 * 4541),  # K = 5 mod 8: no ceiling bar
        entry("3x4096", 2.0, 3.0))                                     # no default variant recorded
    rows = {r["shape"]: r for r in sweep_summary.rows_of(doc, "doc")}
    assert rows["4096x4096"]["fails"] == []
    assert rows["3584x4096"]["fails"] == ["tuned"]
    assert rows["512x3584"]["fails"] == ["untuned", "empty-cache"]  # no neighbour: the default is both
    assert rows["32x8192"]["fails"] == ["few-row"]
    assert rows["16x14336"]["fails"] == []
    assert rows["4097x4099"]["fails"] == ["k3-ceiling"]
    assert rows["4096x4093"]["fails"] == []
    assert rows["3x4096"]["untuned_x"] is None and rows["3x4096"]["fails"] == []
    assert rows["4096x4096"]["bytes"] == 4096 * 4096 * 2

    path = write(tmp_path, "bench_families.json", doc)
    rc, out, _ = run(path, "--check")
    assert rc == 1
    assert "| 32x8192 | 0.50 | 1 | 2.60 | 4.00 | 1.54x | 1.48x | 1.48x | 22.0 | **few-row** |" in out
    assert "| 4097x4099 | 32.0 | 1 | 9.00 | 12.00 | 1.33x | 1.20x | 1.20x | 75.0 | **k3-ceiling** |" in out
    assert "| 3x4096 | 0.02 | 1 | 2.00 | 3.00 | 1.50x | - | - | 22.0 |  |" in out
    assert "bar few-row (N < 64, K ~ 8192 (bf16) <= 2.5 us): 0/1 rows meet it; missed by 32x8192 M=1" in out
    assert "bar k3-ceiling (~33 MB with K = 3 (mod 8) >= 80% of the read ceiling): 0/1 rows meet it" in out
    assert "bar untuned (>= 0.95x cuBLAS untuned): 6/7 rows meet it; missed by 512x3584 M=1" in out


def test_passing_files_and_several_files(tmp_path):
    a = write(tmp_path, "a.json", document(entry("4096x4096", 9.0, 12.0, 10.0)))
    b = write(tmp_path, "b.json", document(entry("32x8192", 2.0, 4.0, 2.2), entry("4097x4099", 9.0, 12.0, 10.0,
                                                                                tuned_gbps=0.85 * 4541)))
    rc, out, err = run(a, b, "--check")
    assert rc == 0, out + err
    assert out.startswith("| file | shape (N x K) |")
    assert "| a.json | 4096x4096 |" in out and "| b.json | 32x8192 |" in out
    assert "M = 1: 3 rows, geometric mean tuned" in out


def test_untuned_variant_is_preferred_to_the_default(tmp_path):
    # The nearest other shape's config ("untuned") is what a server runs: it decides the bar.
    e = entry("4096x4096", 9.0, 12.0, 10.0)  # default at 1.2x cuBLAS
    e["variants"].insert(2, variant("untuned", 13.0))  # the nearest shape's config: 0.92x
    rc, out, err = run(write(tmp_path, "u.json", document(e)), "--check")
    assert rc == 1, out + err
    assert "| 0.92x | 1.20x |" in out and "**untuned**" in out


def test_an_empty_cache_is_its_own_bar(tmp_path):
    # A tuned neighbour serves the shape at 1.09x, but with nothing tuned the analytic default
    # runs 0.88x (the H200's 14336x3584, 2026-12-06): the untuned bar holds, the empty-cache one not.
    e = entry("14336x3584", 24.1, 26.7, 30.1)
    e["variants"].insert(2, variant("untuned", 24.5))
    rows = sweep_summary.rows_of(document(e), "doc")
    assert rows[0]["fails"] == ["empty-cache"]
    rc, out, err = run(write(tmp_path, "e.json", document(e)), "--check")
    assert rc == 1, out + err
    assert "| 14336x3584 | 98.0 | 1 | 24.10 | 26.70 | 1.11x | 1.09x | 0.89x |" in out
    assert "bar untuned (>= 0.95x cuBLAS untuned): 1/1 rows meet it" in out
    assert ("bar empty-cache (>= 0.95x cuBLAS on the analytic default, nothing tuned): 0/1 rows meet it; "
            "missed by 14336x3584 M=1") in out


@pytest.mark.parametrize("content, message", [
    ("{\"gpu\": \"x\"}", "not a gemvtune bench --json document"),
    ("not json", "bad.json:"),
    (json.dumps(document({"shape": "4096x4096", "batch": 1, "variants": [variant("tuned", 1.0)]})),
     "lacks the tuned or the cuBLAS variant"),
])
def test_bad_input_exits_2(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    rc, out, err = run(str(path))
    assert rc == 2 and out == ""
    assert message in err


def test_missing_file_exits_2(tmp_path):
    rc, _, err = run(str(tmp_path / "none.json"))
    assert rc == 2 and "none.json" in err
