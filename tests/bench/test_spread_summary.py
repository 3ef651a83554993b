"""scripts/spread_summary.py without a GPU: made-up gemvtune-sweep CSVs of the kind
GEMVTUNE_SWEEP_SPREAD=1 writes (each config as scheduled, then CONFIG+spread). Run by CTest as
`spread_summary` (tests/python/tests.cmake); standard library and pytest only."""

import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "spread_summary.py")
HEADER = "shape,dtype,config,us,gbps,model_us\n"


def run(*args):
    r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def write(tmp_path, name, rows):
    p = tmp_path / name
    p.write_text(HEADER + "".join(f"{s},bf16,{c},{us},1,1\n" for s, c, us in rows))
    return str(p)


def table_row(out, shape):
    return next(line for line in out.splitlines() if line.startswith(f"| {shape} |"))


def test_pairs_each_config_with_its_spread_twin(tmp_path):
    f = write(tmp_path, "a.csv", [
        ("8x6144x4096", "a", 20.0), ("8x6144x4096", "a+spread", 15.0),  # a gain
        ("8x6144x4096", "b", 16.0), ("8x6144x4096", "b+spread", 16.2),  # noise (1.25%)
        ("8x6144x4096", "c", 18.0), ("8x6144x4096", "c+spread", 19.8),  # a loss (10%)
        ("8x6144x4096", "d", 30.0),                                      # no twin: left out
    ])
    rc, out, err = run(f)
    assert rc == 0, err
    cells = [c.strip() for c in table_row(out, "8x6144x4096").split("|")[1:-1]]
    assert cells[2] == "3"                        # configs timed both ways
    assert cells[3] == "16.00 (b)"                # fastest as scheduled
    assert cells[4] == "15.00 (a)"                # fastest spread
    assert cells[5] == "0.938"                    # 15 / 16
    assert cells[7] == f"{(0.75 * 1.1) ** 0.5:.3f}"  # changed by more than 3%: a and c
    assert (cells[8], cells[9]) == ("1", "1")     # faster, slower
    assert cells[10] == "a 20.00 -> 15.00 us"
    assert "configs changed by more than 3% over every shape: 2" in out


def test_shapes_of_several_files_each_get_a_row(tmp_path):
    f1 = write(tmp_path, "a.csv", [("2x28672x4096", "x", 60.0), ("2x28672x4096", "x+spread", 58.0)])
    f2 = write(tmp_path, "b.csv", [("4096x4096", "y", 9.0), ("4096x4096", "y+spread", 9.0)])
    rc, out, _ = run(f1, f2)
    assert rc == 0
    assert "0.967" in table_row(out, "2x28672x4096")
    assert table_row(out, "4096x4096").split("|")[6].strip() == "1.000"


def test_unreadable_input_is_a_clear_error(tmp_path):
    rc, out, err = run(str(tmp_path / "missing.csv"))
    assert rc == 2 and "cannot read the sweep" in err and out == ""
    bad = tmp_path / "bad.csv"
    bad.write_text("shape,config\n1x2,a\n")
    rc, _, err = run(str(bad))
    assert rc == 2 and "cannot read the sweep" in err


def test_capped_pairs_a_config_with_its_rc_twin_and_averages_rounds(tmp_path):
    rows = [("6144x4096", "t256_r2_kw1_v16_u4_sk1_cs_pdl", 14.0), ("6144x4096", "t256_r2_kw1_v16_u4_sk1_cs_pdl_rc80", 12.0),
            ("8x6144x4096", "t128_r1_kw1_v16_u2_sk1_cs_rc64_m8", 10.0), ("8x6144x4096", "t128_r1_kw1_v16_u2_sk1_cs_m8", 10.0)]
    f1 = write(tmp_path, "r1.csv", rows)
    f2 = write(tmp_path, "r2.csv", [(s, c, us + (1.0 if "rc80" in c else 0.0)) for s, c, us in rows])
    rc, out, err = run("--pair", "capped", f1, f2)
    assert rc == 0, err
    assert "best capped us" in out
    cells = [c.strip() for c in table_row(out, "6144x4096").split("|")[1:-1]]
    assert cells[2] == "1"
    assert cells[4] == "12.50 (t256_r2_kw1_v16_u4_sk1_cs_pdl)"  # the mean of 12 and 13
    assert cells[5] == f"{12.5 / 14:.3f}"
    cells = [c.strip() for c in table_row(out, "8x6144x4096").split("|")[1:-1]]
    assert cells[5] == "1.000"  # rc before the m tile is found too
    # Without --pair capped the twins are configs of their own, with no +spread partner.
    rc, out, _ = run(f1)
    assert rc == 0 and "| 6144x4096 |" not in out
