"""The Python bench and example scripts refuse bad arguments with argparse's status 2 before any
work (they need PyTorch and a GPU for the work itself, neither of which this test needs): a
median of zero replays or rounds, negative calls, a NaN weight rotation or an unparsable shape
failed with a traceback on the GPU machine, some after the first table had run, and
decode_chain.py checked --batch only after its PyTorch and GPU skips. Run by CTest as
`script_arguments` (tests/python/tests.cmake); standard library and pytest only."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

CASES = [
    ("examples/python/decode_chain.py", ["--batch", "99"], "--batch must be 1..16"),
    ("examples/python/decode_chain.py", ["--replays", "0"], "--replays must be at least 1"),
    ("bench/peers/op_overhead.py", ["--rounds", "0"], "--rounds, --calls and --batch must be at least 1"),
    ("bench/peers/op_overhead.py", ["--calls", "-5"], "--rounds, --calls and --batch must be at least 1"),
    ("bench/peers/op_overhead.py", ["--shapes", "4096x4096,64"], "bad shape '64'"),
    ("bench/peers/op_overhead.py", ["--dtype", "int8"], "--dtype 'int8'"),
    ("bench/peers/quant_peers.py", ["--rotate", "nan"], "--rotate and --tol must be finite and > 0"),
    ("bench/peers/quant_peers.py", ["--tol", "inf"], "--rotate and --tol must be finite and > 0"),
]


@pytest.mark.parametrize("script,args,says", CASES)
def test_bad_arguments_are_usage_errors(script, args, says):
    r = subprocess.run([sys.executable, os.path.join(ROOT, script), *args], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert says in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
