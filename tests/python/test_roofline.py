"""gemvtune.roofline without a GPU: renders a PNG from a small recorded cache (imported from a
JSON document of a few winners and a read ceiling), with and without a `gemvtune bench --json`
file's cuBLAS points, and its errors (missing or empty cache, unknown GPU, bad bench file).
matplotlib is required here (scripts/install_deps.sh installs it), so CI always renders."""

import json

import pytest

import gemvtune
from gemvtune import roofline

H200 = {"name": "NVIDIA H200", "sm_count": 132, "cc_major": 9, "cc_minor": 0}
H200_KEY = "NVIDIA H200/132sm/cc9.0"
CONFIG = "t64_r1_kw1_v16_u1_sk1_cs"  # valid for the dense and the quantized families
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module", autouse=True)
def matplotlib_present():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pytest.fail("matplotlib is not installed for this Python: run scripts/install_deps.sh "
                    "(or pip install matplotlib)")


def _record(n, k, m, weights, time_us, gbps, template_version, gpu=H200):
    return {"gpu": gpu, "n": n, "k": k, "dtype": "bf16", "batch": m, "weights": weights,
            "template_version": template_version, "config": CONFIG, "time_us": time_us, "gbps": gbps,
            "pct_of_ceiling": 100 * gbps / 4541.0, "strategy": "model", "driver_version": 13000,
            "nvrtc_version": "13.0", "timestamp": 1764460800,
            "candidates": [{"config": CONFIG, "outcome": "passed", "reason": "", "time_us": time_us, "gbps": gbps,
                            "pct_of_ceiling": 100 * gbps / 4541.0}]}


def _make_cache(folder, tuned_args, peak=True, extra_gpu=False):
    """A cache in folder (created) from a document of these winners and, if peak, the H200's peak."""
    folder.mkdir(parents=True, exist_ok=True)
    db = str(folder / "cache.sqlite")
    tv = gemvtune.list_cache(db)["template_version"]
    tuned = [_record(*a, template_version=tv) for a in tuned_args]
    if extra_gpu:
        a100 = {"name": "NVIDIA A100-SXM4-80GB", "sm_count": 108, "cc_major": 8, "cc_minor": 0}
        tuned.append(_record(4096, 4096, 1, "dense", 20.0, 1700.0, tv, gpu=a100))
    doc = {"format": "gemvtune-cache", "format_version": 2, "tuned": tuned,
           "peaks": [{"gpu": H200, "gbps": 4541.0, "bytes": 4294967296, "driver_version": 13000,
                      "timestamp": 1764460800}] if peak else []}
    src = folder / "in.json"
    src.write_text(json.dumps(doc))
    gemvtune.import_cache(str(src), db=db)
    return db


# Recorded H200 numbers (bench/results): bf16 dense at M = 1 and 16, int8 and int4g128 at M = 1.
ENTRIES = [
    (4096, 4096, 1, "dense", 9.04, 3715.2),
    (4096, 14336, 1, "dense", 28.1, 4180.0),
    (28672, 4096, 1, "dense", 56.3, 4171.0),
    (4096, 4096, 16, "dense", 10.2, 3350.0),
    (28672, 4096, 16, "dense", 57.9, 4070.0),
    (4096, 4096, 1, "int8", 7.55, 2227.6),
    (28672, 4096, 1, "int4g128", 17.4, 3430.0),
]


def _assert_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 10_000, f"only {len(data)} bytes: nothing drawn?"


def test_renders_a_png_from_a_cache(tmp_path, capsys):
    db = _make_cache(tmp_path, ENTRIES)
    out = tmp_path / "roofline.png"
    assert roofline.main(["--db", db, "--out", str(out)]) == 0
    _assert_png(out)
    said = capsys.readouterr().err
    assert "7 tuned entries of NVIDIA H200/132sm/cc9.0" in said and "read ceiling 4541 GB/s" in said


def test_points_and_panels(tmp_path):
    db = _make_cache(tmp_path, ENTRIES)
    gpu, peak, points = roofline.load_cache(db)
    assert (gpu, peak, len(points)) == (H200_KEY, 4541.0, 7)
    assert {(p["dtype"], p["weights"]) for p in points} == {("bf16", "dense"), ("bf16", "int8"),
                                                            ("bf16", "int4g128")}
    first = next(p for p in points if (p["n"], p["k"], p["batch"], p["weights"]) == (4096, 4096, 1, "dense"))
    assert first["bytes"] == pytest.approx(3715.2 * 9.04 * 1e3)  # gbps x us: about 2 x 4096 x 4096


def _bench_doc(gpu="NVIDIA H200", weights="dense"):
    def variants(us, gbps):
        return [{"variant": "tuned", "config": CONFIG, "graph_us": us * 0.8, "graph_gbps": gbps / 0.8},
                {"variant": "cuBLAS", "config": "cublasGemmEx", "graph_us": us, "graph_gbps": gbps}]
    return {"gpu": gpu, "driver_version": 13000, "nvrtc": "13.0", "dtype": "bf16", "weights": weights,
            "ceiling_gbps": 4541.1, "template_version": "x",
            "shapes": [{"shape": "4096x4096", "batch": 1, "source": "exact", "variants": variants(11.7, 2870.0)},
                       {"shape": "28672x4096", "batch": 16, "source": "exact", "variants": variants(60.1, 3920.0)}]}


def test_renders_cublas_from_a_bench_file(tmp_path, capsys):
    db = _make_cache(tmp_path, ENTRIES)
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(_bench_doc()))
    old = dict(_bench_doc(), weights=None)  # a round-1 bench file without "weights": dense
    del old["weights"]
    old_bench = tmp_path / "old.json"
    old_bench.write_text(json.dumps(old))
    out = tmp_path / "with_cublas.png"
    assert roofline.main(["--db", db, "--bench", str(bench), str(old_bench), "--out", str(out),
                          "--gpu", H200_KEY]) == 0
    _assert_png(out)
    assert "4 cuBLAS points" in capsys.readouterr().err
    ceiling, points = roofline.load_bench(str(bench), H200_KEY)
    assert ceiling == 4541.1 and [(p["n"], p["batch"], p["weights"]) for p in points] == [(4096, 1, "dense"),
                                                                                         (28672, 16, "dense")]


def test_without_a_stored_peak_and_svg(tmp_path):
    db = _make_cache(tmp_path, ENTRIES[:2], peak=False)
    out = tmp_path / "roofline.svg"
    assert roofline.main(["--db", db, "--out", str(out)]) == 0
    assert out.read_text().lstrip().startswith("<?xml")


def test_errors(tmp_path, capsys):
    out = str(tmp_path / "x.png")
    assert roofline.main(["--db", str(tmp_path / "missing.sqlite"), "--out", out]) == 2
    assert "does not exist" in capsys.readouterr().err

    empty = _make_cache(tmp_path / "empty", [])
    assert roofline.main(["--db", empty, "--out", out]) == 2
    assert "has no tuned entries" in capsys.readouterr().err

    two = _make_cache(tmp_path / "two", ENTRIES[:1], extra_gpu=True)
    assert roofline.main(["--db", two, "--out", out]) == 2
    assert "pick one with --gpu" in capsys.readouterr().err
    assert roofline.main(["--db", two, "--out", out, "--gpu", "NVIDIA B200/148sm/cc10.0"]) == 2
    said = capsys.readouterr().err
    assert "no tuned entries of GPU 'NVIDIA B200/148sm/cc10.0'" in said and H200_KEY in said

    db = _make_cache(tmp_path, ENTRIES)
    for text, message in [("{", "is not JSON"), ("[]", "not the output of `gemvtune bench --json`")]:
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        assert roofline.main(["--db", db, "--bench", str(bad), "--out", out]) == 2
        assert message in capsys.readouterr().err
    other = tmp_path / "a100.json"
    other.write_text(json.dumps(_bench_doc(gpu="NVIDIA A100-SXM4-80GB")))
    assert roofline.main(["--db", db, "--bench", str(other), "--out", out]) == 2
    assert "measured on 'NVIDIA A100-SXM4-80GB'" in capsys.readouterr().err
    assert roofline.main(["--db", db, "--bench", str(tmp_path / "none.json"), "--out", out]) == 2
    assert "cannot read bench file" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_missing_matplotlib_is_a_clear_error(tmp_path, monkeypatch, capsys):
    import builtins
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    db = _make_cache(tmp_path, ENTRIES[:1])
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert roofline.main(["--db", db, "--out", str(tmp_path / "x.png")]) == 2
    assert "pip install matplotlib" in capsys.readouterr().err


def test_one_label_per_shape_and_shapes_of_one_column_drawn_apart():
    def pt(n, k, m, gbps):
        return {"n": n, "k": k, "batch": m, "gbps": gbps, "bytes": 2.0 * n * k + 2.0 * m * (n + k)}
    points = [pt(14336, 4096, 1, 4200), pt(14336, 4096, 16, 3800), pt(4096, 14336, 1, 4250),
              pt(4096, 14336, 16, 3900), pt(1024, 4096, 1, 2800), pt(1024, 4096, 16, 1700)]
    columns = roofline._columns(points)
    assert columns == [[(1024, 4096)], [(4096, 14336), (14336, 4096)]]
    shift = roofline._column_shifts(points)
    assert shift[(1024, 4096)] == 1.0
    assert shift[(4096, 14336)] < 1.0 < shift[(14336, 4096)]
    places = roofline._label_places(points, shift)
    assert set(places) == {(1024, 4096), (4096, 14336), (14336, 4096)}  # one label a shape
    assert places[(1024, 4096)] == ((2.0 * 1024 * 4096 + 2.0 * (1024 + 4096), 1700), 0)
    # The column's two labels go under its lowest point, stacked.
    assert places[(4096, 14336)][0][1] == places[(14336, 4096)][0][1] == 3800
    assert sorted(p[1] for nk, p in places.items() if nk != (1024, 4096)) == [0, 1]


def test_no_plottable_points_is_a_one_line_error(tmp_path, capsys):
    # The import takes gbps 0; load_cache leaves such entries out, which once left render no
    # panels and a ZeroDivisionError.
    db = _make_cache(tmp_path, [(4096, 4096, 1, "dense", 9.0, 0.0)])
    out = tmp_path / "x.png"
    assert roofline.main(["--db", db, "--out", str(out)]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "no entries of NVIDIA H200/132sm/cc9.0 with a positive rate" in said
    assert not out.exists()


def test_unsupported_out_extension_is_a_one_line_error(tmp_path, capsys):
    # savefig's ValueError came as a traceback, after the drawing.
    db = _make_cache(tmp_path, ENTRIES[:1])
    out = tmp_path / "roofline.xyz"
    assert roofline.main(["--db", db, "--out", str(out)]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and ".xyz is not a picture format matplotlib writes" in said and ".png" in said
    assert not out.exists()


def test_a_name_without_an_extension_is_written_as_png_under_that_name(tmp_path, capsys):
    # matplotlib appended ".png" to such a name while main() reported the name it was given.
    db = _make_cache(tmp_path, ENTRIES[:1])
    out = tmp_path / "roofline"
    assert roofline.main(["--db", db, "--out", str(out)]) == 0
    _assert_png(out)
    assert not (tmp_path / "roofline.png").exists()
    assert f"wrote {out}:" in capsys.readouterr().err
