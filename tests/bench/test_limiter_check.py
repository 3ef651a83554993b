"""scripts/limiter_check.py without a GPU: its parsing of a bench --json file (a recorded H200 one
and made-up ones), its agreement rule at each threshold, the table, the three ways of asking
explain (the bench's PDL time given with --measured-us, the default; --model-only; --on-device),
and the whole command with a stand-in `gemvtune` (a small Python script answering `import` and
`explain --json`, naming the limiter from --measured-us as explain does). Where the build's real
CLI is found (cli/gemvtune under the working directory, CTest's build folder, or $GEMVTUNE_CLI),
also the recorded H200 file against it. Run by CTest as `limiter_check` (tests/python/tests.cmake);
standard library and pytest only."""

import importlib.util
import json
import os
import stat
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "limiter_check.py")
RECORDED = os.path.join(ROOT, "bench", "results", "raw", "83ba666_bench_batch_bf16.json")

spec = importlib.util.spec_from_file_location("limiter_check", SCRIPT)
lc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lc)


def variant(name, config, us, pct=80.0):
    return {"variant": name, "config": config, "graph_us": us, "graph_gbps": 45.41 * pct, "pct_of_ceiling": pct,
            "eager_us": us, "eager_gbps": 1.0, "graph_vs_cublas": 1.0, "eager_vs_cublas": 1.0}


def entry(shape, m, pdl_us, no_pdl_us, pct, config="t128_r1_kw1_v16_u8_sk1_cs_pdl"):
    vs = [variant("tuned", config, pdl_us, pct)]
    if no_pdl_us is not None:
        vs.append(variant("tuned, no PDL", config.replace("_pdl", ""), no_pdl_us))
    vs += [variant("default", "t64_r1_kw1_v16_u8_sk1_cs_pdl", pdl_us * 1.1), variant("cuBLAS", "cublasGemmEx", 99.0)]
    return {"shape": shape, "batch": m, "source": "exact", "variants": vs}


def document(*entries, dtype="bf16"):
    return {"gpu": "NVIDIA H200", "dtype": dtype, "ceiling_gbps": 4541.0, "driver_version": 13000,
            "shapes": list(entries)}


def explain_json(limiter, shape="4096x4096", m=1, config="t128_r1_kw1_v16_u8_sk1_cs_pdl", model_us=8.5,
                 ceiling=4541.0, dtype="bf16", measured_us=None, source="given with --measured-us",
                 model_share=0.9, largest="launch and ramp"):
    """The fields of `gemvtune explain --json` the script reads; with measured_us, explain named the
    limiter from that time (limiter_basis "measured")."""
    x = {"gpu": "NVIDIA H200/132sm/cc9.0", "shape": shape, "batch": m, "dtype": dtype, "weights": "dense",
         "config": config, "limiter": limiter, "verdict": limiter + ": ...",
         "model": {"time_us": model_us, "launch_us": 0.8, "transfer_us": model_us - 0.8},
         "little": {"read_ceiling_gbps": ceiling, "ceiling_source": "peak stored in x"},
         "limiter_basis": "model" if measured_us is None else "measured",
         "model_stream_share": model_share, "model_largest_cost": largest,
         "measured": None if measured_us is None else {"us": measured_us, "gbps": 1.0, "share_of_ceiling": 0.8,
                                                        "source": source, "given": source.startswith("given")}}
    if measured_us is None:
        x["measured_skipped"] = "no GPU: measured time skipped (test)"
    return x


def row(pdl_us=10.0, no_pdl_us=11.0, pct=80.0):
    r = {"shape": "4096x4096", "m": 1, "tuned_us": pdl_us, "pdl_us": pdl_us, "no_pdl_us": no_pdl_us, "pct": pct}
    r["gain"] = (no_pdl_us - pdl_us) / no_pdl_us if no_pdl_us else None
    return r


def test_recorded_bench_file_parses():
    with open(RECORDED) as f:
        doc = json.load(f)
    rows = lc.rows_of(doc, (1, 8))
    assert len(rows) == 14  # the 7 Llama-3.1-8B shapes at M = 1 and 8
    assert [r["shape"] for r in rows if r["m"] == 1] == [
        "4096x4096", "1024x4096", "6144x4096", "14336x4096", "28672x4096", "4096x14336", "128256x4096"]
    r = rows[0]
    assert (r["shape"], r["m"], r["config"]) == ("4096x4096", 1, "t128_r1_kw2_v16_u4_sk1_cs_pdl_pf")
    assert r["pdl_us"] == pytest.approx(9.036, abs=1e-3)
    assert r["no_pdl_us"] == pytest.approx(11.296, abs=1e-3)
    assert r["gain"] == pytest.approx((11.296 - 9.036) / 11.296, abs=1e-4)  # 20.0%
    assert r["pct"] == pytest.approx(81.81, abs=0.01)
    assert (r["dtype"], r["weights"]) == ("bf16", "dense")
    assert len(lc.rows_of(doc, (16,))) == 7


def test_parsing_of_made_up_documents():
    doc = document(entry("4096x4096", 1, 9.0, 11.0, 82.0), entry("4096x4096", 8, 12.0, 13.0, 60.0),
                   entry("1024x4096", 1, 3.0, None, 60.0, config="t64_r1_kw2_v16_u8_sk1_cs"),
                   entry("1024x4096", 2, 3.0, 4.0, 60.0))
    rows = lc.rows_of(doc, (1, 8))
    assert [(r["shape"], r["m"]) for r in rows] == [("4096x4096", 1), ("4096x4096", 8), ("1024x4096", 1)]
    assert rows[0]["gain"] == pytest.approx(2 / 11)
    # A winner without PDL is its own no-PDL time; its PDL time and gain are unknown.
    assert (rows[2]["pdl_us"], rows[2]["no_pdl_us"], rows[2]["gain"]) == (None, 3.0, None)
    # A PDL winner without a no-PDL variant: gain unknown.
    assert lc.rows_of(document(entry("4096x4096", 1, 9.0, None, 82.0)))[0]["gain"] is None
    # % of ceiling from GB/s when bench gave none.
    e = entry("4096x4096", 1, 9.0, 11.0, 82.0)
    del e["variants"][0]["pct_of_ceiling"]
    assert lc.rows_of(document(e))[0]["pct"] == pytest.approx(82.0)
    assert lc.rows_of(document(entry("4096x4096", 1, 9.0, 11.0, 82.0), dtype="fp32"))[0]["dtype"] == "fp32"
    # Other spellings of the no-PDL variant.
    e = entry("4096x4096", 1, 9.0, 11.0, 82.0)
    e["variants"][1]["variant"] = "tuned (no_pdl)"
    assert lc.rows_of(document(e))[0]["no_pdl_us"] == 11.0
    for bad in ({"shapes": "x"}, [], {"shapes": [{"shape": "4096", "variants": []}]},
                {"shapes": [{"shape": "8x8", "batch": 1, "variants": [variant("cuBLAS", "c", 1.0)]}]}):
        with pytest.raises(lc.BadInput):
            lc.rows_of(bad)


def test_agreement_rule_at_its_thresholds():
    # bandwidth: >= 85% of the ceiling, whatever PDL gains.
    assert lc.agreement("bandwidth", row(pct=85.0))[0] is True
    assert lc.agreement("bandwidth", row(pct=84.9))[0] is False
    assert lc.agreement("bandwidth", row(pdl_us=10, no_pdl_us=20, pct=90))[0] is True
    # launch and ramp: PDL saves >= 10%, or the PDL call is under 8 us.
    assert lc.agreement("launch and ramp", row(pdl_us=9.0, no_pdl_us=10.0, pct=95))[0] is True  # 10.0% exactly
    assert lc.agreement("launch and ramp", row(pdl_us=9.1, no_pdl_us=10.0, pct=70))[0] is False  # 9%, 9.1 us
    assert lc.agreement("launch and ramp", row(pdl_us=7.9, no_pdl_us=8.0, pct=70))[0] is True  # short
    assert lc.agreement("launch and ramp", row(pdl_us=8.0, no_pdl_us=8.1, pct=70))[0] is False
    assert lc.agreement("launch and ramp", row(pdl_us=20.0, no_pdl_us=None))[0] is None  # gain unknown, long call
    assert lc.agreement("launch and ramp", row(pdl_us=5.0, no_pdl_us=None))[0] is True  # short needs no gain
    # grid, bytes in flight, issue, repeated loads: < 85% of the ceiling and PDL saves < 10%.
    for limiter in ("grid", "bytes in flight", "issue", "repeated loads"):
        assert lc.agreement(limiter, row(pdl_us=10, no_pdl_us=10.5, pct=70))[0] is True
        assert lc.agreement(limiter, row(pdl_us=10, no_pdl_us=12, pct=70))[0] is False  # PDL saves 16.7%
        assert lc.agreement(limiter, row(pdl_us=10, no_pdl_us=10.5, pct=85))[0] is False
        assert lc.agreement(limiter, row(pdl_us=10, no_pdl_us=None, pct=70))[0] is None
    # A grid of fewer blocks than SMs also agrees when the call's rate stays within 1.1x its
    # blocks' share of the ceiling, whatever PDL saves (64 of 132 SMs: 48.5%, so up to 53.3%);
    # not on a grid that fills the SMs, nor for the other stream limiters.
    small = dict(row(pdl_us=3.87, no_pdl_us=4.50, pct=48.1), grid_blocks=64, sm_count=132)
    assert lc.agreement("grid", small)[0] is True
    assert lc.agreement("grid", dict(small, pct=53.3))[0] is True
    assert lc.agreement("grid", dict(small, pct=53.4))[0] is False
    assert lc.agreement("grid", dict(small, grid_blocks=132))[0] is False
    assert lc.agreement("bytes in flight", small)[0] is False
    # A saving of more than 5 us per call is not launch overlap (the PDL build's own code: fp32 at
    # M = 16 on the H200, 1589 us with PDL and 2371 without): no evidence for launch and ramp,
    # and a stream limiter goes by the ceiling alone.
    assert lc.agreement("launch and ramp", row(pdl_us=100.0, no_pdl_us=130.0, pct=70))[0] is False
    assert lc.agreement("issue", row(pdl_us=100.0, no_pdl_us=130.0, pct=70))[0] is True
    assert lc.agreement("issue", row(pdl_us=100.0, no_pdl_us=130.0, pct=90))[0] is False
    assert lc.agreement("issue", row(pdl_us=40.0, no_pdl_us=44.9, pct=70))[0] is False  # 4.9 us: overlap
    assert lc.measured_points_to(row(pdl_us=100.0, no_pdl_us=130.0, pct=70)) == "stream below the ceiling"
    # split-K fix-up: the config splits K and the call is under 85% of the ceiling, whatever PDL
    # gains (PDL overlaps the fix-up tail as it does the launch).
    split = dict(row(pdl_us=10, no_pdl_us=14, pct=70), config="tc_t128_r1_kw4_v16_u4_sk8_cs_pdl_m8")
    assert lc.agreement("split-K fix-up", split)[0] is True
    assert lc.agreement("split-K fix-up", dict(split, pct=86))[0] is False
    assert lc.agreement("split-K fix-up", dict(split, config="t128_r1_kw1_v16_u8_sk1_cs_pdl"))[0] is False
    assert lc.agreement("split-K", row())[0] is None
    # What the measurements alone point to: the first kind that holds.
    assert lc.measured_points_to(row(pdl_us=10, no_pdl_us=20, pct=90)) == "bandwidth"
    assert lc.measured_points_to(row(pdl_us=10, no_pdl_us=12, pct=80)) == "launch and ramp"
    assert lc.measured_points_to(row(pdl_us=10, no_pdl_us=10.5, pct=80)) == "stream below the ceiling"
    assert lc.measured_points_to(row(pdl_us=10, no_pdl_us=None, pct=80)) == "?"


def test_check_with_an_injected_explain_and_the_table():
    doc = document(entry("4096x4096", 1, 9.04, 11.30, 81.8, config="t128_r1_kw2_v16_u4_sk1_cs_pdl_pf"),
                   entry("1024x4096", 1, 2.88, 4.22, 64.2, config="t128_r2_kw4_v16_u4_sk1_cs_pdl_pf"),
                   entry("14336x4096", 1, 27.93, 29.05, 92.6))
    limiters = {"4096x4096": "bandwidth", "1024x4096": "launch and ramp", "14336x4096": "bandwidth"}
    calls = []

    def fake_explain(shape, m, config, dtype, weights, measured_us, no_pdl_us=None):
        calls.append((shape, m, config, dtype, weights, measured_us, no_pdl_us))
        return explain_json(limiters[shape], shape, m, config, measured_us=measured_us)

    # The default mode gives explain each row's tuned (PDL) time and its no-PDL time, and keeps the
    # limiter it names from them.
    rows = lc.check(lc.rows_of(doc, (1,)), fake_explain)
    assert calls == [("4096x4096", 1, "t128_r1_kw2_v16_u4_sk1_cs_pdl_pf", "bf16", "dense", 9.04, 11.30),
                     ("1024x4096", 1, "t128_r2_kw4_v16_u4_sk1_cs_pdl_pf", "bf16", "dense", 2.88, 4.22),
                     ("14336x4096", 1, "t128_r1_kw1_v16_u8_sk1_cs_pdl", "bf16", "dense", 27.93, 29.05)]
    assert [(r["explain_us"], r["explain_source"]) for r in rows] == [(9.04, "given"), (2.88, "given"), (27.93, "given")]
    assert [r["agrees"] for r in rows] == [False, True, True]
    assert rows[0]["measured"] == "launch and ramp"
    assert rows[0]["why"] == "81.8% of the ceiling < 85%"
    out = lc.render(rows, "title")
    lines = out.splitlines()
    assert lines[0] == "title"
    assert "explain's read ceiling: 4541 GB/s (peak stored in x)." in lines
    assert any(line.startswith("Agreement rule: **bandwidth** agrees when the PDL call reaches >= 85%") for line in lines)
    assert ("| 4096x4096 | 1 | `t128_r1_kw2_v16_u4_sk1_cs_pdl_pf` | bandwidth | 8.50 | 9.04 us (given) | 9.04 | 11.30 "
            "| 20.0% | 81.8 | launch and ramp | **no** | 81.8% of the ceiling < 85% |") in lines
    assert ("| 1024x4096 | 1 | `t128_r2_kw4_v16_u4_sk1_cs_pdl_pf` | launch and ramp | 8.50 | 2.88 us (given) | 2.88 "
            "| 4.22 | 31.8% | 64.2 | launch and ramp | yes | PDL saves 31.8%, PDL call 2.88 us |") in lines
    assert "M = 1: explain agrees with the measurements on 2 of 3 shapes; disagrees on 4096x4096 (bandwidth)" in lines
    # explain must have explained what was asked.
    with pytest.raises(lc.BadInput):
        lc.check(lc.rows_of(doc, (1,)), lambda s, m, c, d, w, t, **_: explain_json("bandwidth", s, m, "t64_other", measured_us=t))
    with pytest.raises(lc.BadInput):
        lc.check(lc.rows_of(doc, (1,)),
                 lambda s, m, c, d, w, t, **_: explain_json("bandwidth", s, m, c, dtype="fp16", measured_us=t))
    with pytest.raises(lc.BadInput):
        lc.check(lc.rows_of(doc, (1,)), lambda s, m, c, d, w, t, **_: {"error": "x"})


def test_not_modelled_asks_explain_of_the_config_without_pdl():
    # 4096x4096 at M = 16 (H200, 2c95b28): not modelled with PDL (PDL saves 11%); explain of the
    # no-PDL config given the no-PDL time decides whether the excess is there without the overlap.
    doc = document(entry("4096x4096", 16, 10.21, 11.48, 72.9, config="tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_m16"))
    for without, agrees in (("not modelled", True), ("launch and ramp", False)):
        calls = []

        def fake_explain(shape, m, config, dtype, weights, measured_us, no_pdl_us=None):
            calls.append((config, measured_us, no_pdl_us))
            return explain_json("not modelled" if "_pdl" in config else without, shape, m, config,
                                measured_us=measured_us)

        rows = lc.check(lc.rows_of(doc, (16,)), fake_explain)
        assert calls == [("tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_m16", 10.21, 11.48),
                         ("tc_t256_r1_kw8_v16_u2_sk1_cs_m16", 11.48, None)]
        assert rows[0]["no_pdl_limiter"] == without
        assert rows[0]["agrees"] is agrees, rows[0]["why"]
    # Other limiters ask explain once per row.
    calls = []
    lc.check(lc.rows_of(doc, (16,)), lambda s, m, c, d, w, t, **_: calls.append(c) or explain_json("grid", s, m, c, measured_us=t))
    assert len(calls) == 1


def test_default_mode_needs_explain_to_have_used_the_time_given():
    doc = document(entry("4096x4096", 1, 9.04, 11.30, 81.8))
    # An explain that ignored --measured-us (named the limiter from the model) or used another time.
    with pytest.raises(lc.BadInput, match="did not name the limiter from a measurement"):
        lc.check(lc.rows_of(doc, (1,)), lambda s, m, c, d, w, t, **_: explain_json("bandwidth", s, m, c))
    with pytest.raises(lc.BadInput, match="explain used 9.5 us, not the 9.04 us given"):
        lc.check(lc.rows_of(doc, (1,)), lambda s, m, c, d, w, t, **_: explain_json("bandwidth", s, m, c, measured_us=9.5))


def test_model_only_mode_keeps_the_models_limiter():
    doc = document(entry("4096x4096", 1, 9.04, 11.30, 81.8), entry("14336x4096", 1, 27.93, 29.05, 92.6))
    given = []

    def model_explain(s, m, c, d, w, t):
        given.append(t)
        return explain_json("bandwidth", s, m, c)  # an explain that did not measure: its limiter is the model's

    rows = lc.check(lc.rows_of(doc, (1,)), model_explain, "model")
    assert given == [None, None]  # no --measured-us
    assert [r["limiter"] for r in rows] == ["bandwidth", "bandwidth"]
    assert [r["agrees"] for r in rows] == [False, True]
    assert [(r["explain_us"], r["explain_source"]) for r in rows] == [(None, "model only")] * 2
    assert "| bandwidth | 8.50 | - | 9.04 |" in lc.render(rows)
    # An explain that measured anyway (on a GPU of that model): the model's limiter from its model
    # fields, bandwidth at >= 85% of the predicted time, else the largest cost.
    measured = lambda share: (lambda s, m, c, d, w, t, **_: explain_json(
        "grid", s, m, c, measured_us=9.0, source="measured on device 0 in graph mode", model_share=share,
        largest="bytes in flight"))
    assert [r["limiter"] for r in lc.check(lc.rows_of(doc, (1,)), measured(0.85), "model")] == ["bandwidth"] * 2
    assert [r["limiter"] for r in lc.check(lc.rows_of(doc, (1,)), measured(0.849), "model")] == ["bytes in flight"] * 2
    bad = explain_json("grid", measured_us=9.0)
    del bad["model_stream_share"]
    with pytest.raises(lc.BadInput, match="model_stream_share"):
        lc.check(lc.rows_of(doc, (1,)), lambda *a: dict(bad, shape=a[0], config=a[2]), "model")


def test_on_device_mode_needs_explain_to_have_measured():
    doc = document(entry("4096x4096", 1, 9.04, 11.30, 81.8))
    given = []

    def device_explain(s, m, c, d, w, t):
        given.append(t)
        return explain_json("launch and ramp", s, m, c, measured_us=9.1, source="measured on device 0 in graph mode")

    rows = lc.check(lc.rows_of(doc, (1,)), device_explain, "device")
    assert given == [None]  # explain measures; nothing is given
    assert (rows[0]["limiter"], rows[0]["explain_us"], rows[0]["explain_source"]) == \
        ("launch and ramp", 9.1, "measured by explain")
    assert rows[0]["agrees"] is True
    assert "| 9.10 us (measured by explain) |" in lc.render(rows)
    with pytest.raises(lc.BadInput, match="did not name the limiter from a measurement: no GPU: measured time skipped"):
        lc.check(lc.rows_of(doc, (1,)), lambda s, m, c, d, w, t, **_: explain_json("bandwidth", s, m, c), "device")
    with pytest.raises(ValueError):
        lc.check(lc.rows_of(doc, (1,)), device_explain, "guess")


def test_peak_document():
    d = lc.peak_document("NVIDIA H200/132sm/cc9.0", 4541.13, 13000)
    assert d["format"] == "gemvtune-cache" and d["tuned"] == []
    assert d["peaks"][0]["gpu"] == {"name": "NVIDIA H200", "sm_count": 132, "cc_major": 9, "cc_minor": 0}
    assert d["peaks"][0]["gbps"] == 4541.13 and d["peaks"][0]["bytes"] > 0
    assert lc.parse_gpu_key("A/B/108sm/cc8.0")["name"] == "A/B"
    for bad in ("NVIDIA H200", "NVIDIA H200/132/cc9.0", "x/132sm/9.0", "x/132sm/ccnine"):
        with pytest.raises(lc.BadInput):
            lc.parse_gpu_key(bad)


# A stand-in for the CLI: `import FILE --db DB` copies the peak's GB/s into DB; `explain --json`
# answers with the ceiling of DB when it exists (else 4470) and the model's limiter from a table
# by shape (LIMITERS: [model's limiter, model's largest cost]). With --measured-us T it names the
# limiter as explain does: bandwidth when the call's bytes (bf16, M x (N + K) of x and y) at the
# ceiling are >= 85% of T, else the largest cost. Every call is logged to LOG.
FAKE_CLI = r'''#!PYTHON
import json, os, sys
a = sys.argv[1:]
opt = lambda name: a[a.index(name) + 1]
if a[0] == "import":
    doc = json.load(open(a[1]))
    json.dump({"gbps": doc["peaks"][0]["gbps"], "gpu": doc["peaks"][0]["gpu"]}, open(opt("--db"), "w"))
    print("imported"); sys.exit(0)
assert a[0] == "explain" and "--json" in a, a
with open(LOG, "a") as f:
    f.write(json.dumps(a) + "\n")
if "--gpu" not in a and not os.environ.get("STAND_IN_GPU"):
    sys.stderr.write("gemvtune explain: no GPU to read the model from (stand-in)\n"); sys.exit(2)
db = opt("--db")
ceiling, source = (json.load(open(db))["gbps"], "peak stored in " + db) if os.path.exists(db) else (4470.0, "model default")
model_limiter, largest = LIMITERS[opt("--shape")]
x = {"config": opt("--config"), "dtype": opt("--dtype"), "weights": opt("--weights"),
     "shape": opt("--shape"), "batch": int(opt("--batch")),
     "gpu": opt("--gpu") if "--gpu" in a else "NVIDIA H200/132sm/cc9.0",
     "limiter": model_limiter, "verdict": "...", "limiter_basis": "model", "model_largest_cost": largest,
     "model_stream_share": 0.9 if model_limiter == "bandwidth" else 0.7,
     "model": {"time_us": 9.5}, "little": {"read_ceiling_gbps": ceiling, "ceiling_source": source},
     "measured": None, "measured_skipped": "no GPU: measured time skipped"}
if "--measured-us" in a or "--gpu" not in a:  # given a time, or on the stand-in's own GPU: measures 9.1 us
    us = float(opt("--measured-us")) if "--measured-us" in a else 9.1
    n, k = (int(v) for v in opt("--shape").split("x"))
    gbps = 2.0 * (n * k + int(opt("--batch")) * (n + k)) / (us * 1e-6) / 1e9
    x.update(limiter="bandwidth" if gbps / ceiling >= 0.85 else largest, limiter_basis="measured",
             measured={"us": us, "gbps": gbps, "share_of_ceiling": gbps / ceiling,
                       "source": "given with --measured-us" if "--measured-us" in a else "measured on device 0 in graph mode",
                       "given": "--measured-us" in a})
    del x["measured_skipped"]
print(json.dumps(x))
'''


def fake_cli(tmp_path, limiters):
    """limiters: shape -> [the model's limiter, its largest cost] (a string: both the same)."""
    limiters = {s: [v, v] if isinstance(v, str) else list(v) for s, v in limiters.items()}
    path = tmp_path / "gemvtune"
    log = tmp_path / "explain_calls.jsonl"
    path.write_text(FAKE_CLI.replace("PYTHON", sys.executable).replace("LIMITERS", repr(limiters))
                    .replace("LOG", repr(str(log))))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def explain_calls(tmp_path):
    """The argument lists the stand-in CLI's explain was called with, since the last call of this."""
    log = tmp_path / "explain_calls.jsonl"
    if not log.exists():
        return []
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    log.unlink()
    return calls


def opt(args, name):
    return args[args.index(name) + 1] if name in args else None


def run(*args):
    r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def test_command_with_a_stand_in_cli(tmp_path):
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(document(entry("4096x4096", 1, 9.04, 11.30, 81.8),
                                         entry("28672x4096", 1, 53.88, 54.74, 96.0),
                                         entry("28672x4096", 8, 56.76, 61.62, 91.3))))
    cli = fake_cli(tmp_path, {"4096x4096": "launch and ramp", "28672x4096": "bandwidth"})
    rc, out, err = run(str(bench), "--cli", cli, "--check")
    assert rc == 0, err
    assert "explain's read ceiling: 4541 GB/s (peak stored in a one-peak cache made by this script)." in out
    assert ("| 4096x4096 | 1 | `t128_r1_kw1_v16_u8_sk1_cs_pdl` | launch and ramp | 9.50 | 9.04 us (given) | 9.04 "
            "| 11.30 | 20.0% |") in out
    assert "M = 8: explain agrees with the measurements on 1 of 1 shapes" in out
    assert "--measured-us` (the bench's tuned PDL time)" in out
    # Each explain got --gpu, the one-peak cache and the row's PDL time, as written.
    calls = explain_calls(tmp_path)
    assert [(opt(c, "--shape"), opt(c, "--batch"), opt(c, "--measured-us"), opt(c, "--gpu")) for c in calls] == [
        ("4096x4096", "1", "9.04", "NVIDIA H200/132sm/cc9.0"), ("28672x4096", "1", "53.88", "NVIDIA H200/132sm/cc9.0"),
        ("28672x4096", "8", "56.76", "NVIDIA H200/132sm/cc9.0")]
    assert all(opt(c, "--db").endswith("peak.sqlite") for c in calls)
    rc, out, err = run(str(bench), "--cli", cli, "--batch", "1", "--ceiling", "model")
    assert rc == 0, err
    assert "explain's read ceiling: 4470 GB/s (model default)." in out and "M = 8" not in out
    explain_calls(tmp_path)
    # A disagreement: exit 1 with --check, 0 without.
    cli = fake_cli(tmp_path, {"4096x4096": "grid", "28672x4096": "bandwidth"})
    assert run(str(bench), "--cli", cli, "--check")[0] == 1
    rc, out, _ = run(str(bench), "--cli", cli)
    assert rc == 0 and "disagrees on 4096x4096 (grid)" in out
    explain_calls(tmp_path)
    # Unreadable input, no rows, a CLI that fails: exit 2 with a message.
    rc, _, err = run(str(tmp_path / "missing.json"), "--cli", cli)
    assert rc == 2 and "limiter_check:" in err
    rc, _, err = run(str(bench), "--cli", cli, "--batch", "4")
    assert rc == 2 and "no shape at M = 4" in err
    rc, _, err = run(str(bench), "--cli", str(tmp_path / "no-such-cli"))
    assert rc == 2 and "limiter_check:" in err


def test_measured_time_decides_where_the_model_said_bandwidth(tmp_path):
    """Today's H200 case: the model calls a row bandwidth-bound, the PDL call reaches only 84% of
    the ceiling. Given the PDL time, explain names the model's largest cost and the row agrees;
    --model-only keeps the model's bandwidth, and the row disagrees."""
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(document(entry("6144x4096", 1, 13.12, 13.60, 84.2),      # PDL saves 3.5%
                                         entry("14336x4096", 1, 27.97, 29.10, 92.1))))
    cli = fake_cli(tmp_path, {"6144x4096": ["bandwidth", "grid"], "14336x4096": ["bandwidth", "launch and ramp"]})
    rc, out, err = run(str(bench), "--cli", cli, "--check")
    assert rc == 0, err
    assert "| 6144x4096 | 1 | `t128_r1_kw1_v16_u8_sk1_cs_pdl` | grid | 9.50 | 13.12 us (given) |" in out
    assert "| 14336x4096 | 1 | `t128_r1_kw1_v16_u8_sk1_cs_pdl` | bandwidth | 9.50 | 27.97 us (given) |" in out
    assert "M = 1: explain agrees with the measurements on 2 of 2 shapes" in out
    assert [opt(c, "--measured-us") for c in explain_calls(tmp_path)] == ["13.12", "27.97"]
    rc, out, err = run(str(bench), "--cli", cli, "--check", "--model-only")
    assert rc == 1, err
    assert "the model's limiter alone (--model-only)" in out
    assert "| 6144x4096 | 1 | `t128_r1_kw1_v16_u8_sk1_cs_pdl` | bandwidth | 9.50 | - |" in out
    assert "disagrees on 6144x4096 (bandwidth)" in out
    assert all(opt(c, "--measured-us") is None and opt(c, "--gpu") for c in explain_calls(tmp_path))


def test_on_device_arguments(tmp_path):
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(document(entry("4096x4096", 1, 9.04, 11.30, 81.8))))
    cli = fake_cli(tmp_path, {"4096x4096": "launch and ramp"})
    cache = tmp_path / "bench.sqlite"
    cache.write_text("")
    # Refused: without --db, with --gpu or --ceiling, with --model-only; --db without --on-device.
    for extra, says in ((["--on-device"], "--on-device needs --db"),
                        (["--on-device", "--db", str(cache), "--gpu", "NVIDIA H200/132sm/cc9.0"], "drop --gpu"),
                        (["--on-device", "--db", str(cache), "--ceiling", "bench"], "drop --gpu and --ceiling"),
                        (["--on-device", "--db", str(cache), "--model-only"], "not allowed with"),
                        (["--db", str(cache)], "--db is for --on-device")):
        rc, _, err = run(str(bench), "--cli", cli, *extra)
        assert rc == 2 and says in err, (extra, err)
    rc, _, err = run(str(bench), "--cli", cli, "--on-device", "--db", str(tmp_path / "missing.sqlite"))
    assert rc == 2 and "no such cache file" in err
    assert explain_calls(tmp_path) == []
    # explain is run without --gpu or --measured-us and with the bench's cache; here there is no
    # GPU (the stand-in refuses as gemvtune does), so the row is an error, exit 2.
    rc, _, err = run(str(bench), "--cli", cli, "--on-device", "--db", str(cache))
    assert rc == 2 and "no GPU to read the model from" in err, err
    [call] = explain_calls(tmp_path)
    assert opt(call, "--gpu") is None and opt(call, "--measured-us") is None and opt(call, "--db") == str(cache)
    assert opt(call, "--config") == "t128_r1_kw1_v16_u8_sk1_cs_pdl"


def test_on_device_reports_the_bench_caches_ceiling(tmp_path):
    """With --on-device explain reads the read ceiling from the bench's own cache, and the report
    names that cache (it said 'a one-peak cache made by this script', the other modes' own)."""
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(document(entry("4096x4096", 1, 9.04, 11.30, 81.8))))
    cli = fake_cli(tmp_path, {"4096x4096": "launch and ramp"})
    cache = tmp_path / "bench.sqlite"
    cache.write_text(json.dumps({"gbps": 4553.0, "gpu": "NVIDIA H200/132sm/cc9.0"}))
    r = subprocess.run([sys.executable, SCRIPT, str(bench), "--cli", cli, "--on-device", "--db", str(cache)],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "STAND_IN_GPU": "1"})
    assert r.returncode == 0, r.stderr
    assert f"explain's read ceiling: 4553 GB/s (peak stored in {cache})." in r.stdout
    assert "one-peak cache" not in r.stdout
    assert "| 9.10 us (measured by explain) |" in r.stdout
    [call] = explain_calls(tmp_path)
    assert opt(call, "--gpu") is None and opt(call, "--db") == str(cache)


def real_cli():
    path = os.environ.get("GEMVTUNE_CLI") or os.path.join(os.getcwd(), "cli", "gemvtune")
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


@pytest.mark.skipif(real_cli() is None, reason="no built gemvtune (cli/gemvtune under the working directory)")
def test_recorded_h200_file_with_the_real_cli():
    """The recorded H200 run through the build's explain, given each row's PDL time: explain calls
    a row bandwidth-bound exactly when bench measured it at >= 85% of the ceiling (the same bytes
    over the same time against the same ceiling), whatever the model predicts; the rows where the
    model alone said bandwidth but the PDL call reached < 85% now agree on bandwidth's side."""
    cli = real_cli()
    rc, out, err = run(RECORDED, "--cli", cli)
    assert rc == 0, err
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| ") and "x" in line.split(" | ")[0]
            and not line.startswith("| shape")]
    assert len(rows) == 14
    for cells in rows:
        limiter, explain_time, pdl_us, pct = cells[3], cells[5], float(cells[6]), float(cells[9])
        assert explain_time == f"{pdl_us:.2f} us (given)", cells
        assert (limiter == "bandwidth") == (pct >= 85.0), cells
    # --model-only: explain is given no time (and measures none here: --gpu, and no such device
    # where this runs, or one that is not that GPU's model) and names the model's own limiter.
    rc, out, err = run(RECORDED, "--cli", cli, "--model-only")
    assert rc == 0, err
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| ") and "x" in line.split(" | ")[0]
            and not line.startswith("| shape")]
    assert len(rows) == 14 and all(cells[5] == "-" for cells in rows)
