#!/usr/bin/env python3
"""Does `gemvtune explain`'s limiter agree with the measured PDL and no-PDL times? (issue 15)

    python3 scripts/limiter_check.py BENCH.json --cli build/cli/gemvtune [--batch 1,8]
        [--gpu 'NVIDIA H200/132sm/cc9.0'] [--ceiling bench|model] [--model-only] [--check]
    python3 scripts/limiter_check.py BENCH.json --cli build/cli/gemvtune --on-device --db CACHE
        [--batch 1,8] [--check]                       (on the GPU machine that ran bench)

For every shape of a `gemvtune bench --json` file (the Llama-3.1-8B preset when bench ran with
`--preset llama-3.1-8b`) at each M asked for, the tuned winner's config and its graph-mode times
(the "tuned" variant, with PDL, and "tuned, no PDL", the same config without `_pdl`/`_pf`) are
put beside what `gemvtune explain --json` says of that config. Three ways to ask explain:

  default       `explain --gpu GPU --shape S --batch M --config C --measured-us T
                --measured-no-pdl-us T2`, T the row's tuned (PDL) graph-mode time from the bench
                file and T2 its "tuned, no PDL" time: no GPU needed, and explain
                names the limiter from those measurements as it does on the GPU (bandwidth when
                the call reaches >= 85% of the read ceiling; launch and ramp when PDL saves
                >= 10% of the no-PDL time, never when it saves less; else the model's largest
                cost beyond the stream), so the check reproduces what explain says on the H200
                from bench's own measurements.
  --model-only  the same without --measured-us: the limiter the analytic model alone names
                (bandwidth when the stream at the ceiling is >= 85% of the model's predicted
                time). Read from explain's model fields (model_largest_cost,
                model_stream_share), so it stays the model's even where explain measured.
  --on-device   `explain --db CACHE --shape S --batch M --config C` without --gpu or
                --measured-us, CACHE (--db, required) the cache bench tuned into: explain reads
                the GPU model from device 0 and the read ceiling from CACHE, and measures the
                call itself (one checked graph-mode timing); a row where explain did not
                measure is an error. Needs the GPU; --gpu and --ceiling do not apply.

With --ceiling bench (the default) explain is given the read ceiling bench measured in that run,
through a throw-away cache holding only that peak (`gemvtune import`, then `--db`); with
--ceiling model it keeps the model's default (4470 GB/s).

Measured quantities per row (graph mode, microseconds per call):
  PDL us      the tuned winner (its config has `_pdl`)
  no-PDL us   the same config without PDL
  PDL gain    (no-PDL - PDL) / no-PDL: what overlapping launch, ramp and drain with the
              neighbouring calls saves, the only thing PDL changes
  % ceiling   the PDL call's GB/s over the read ceiling bench measured (bench's own figure)

The agreement rule, from what each limiter means in tuner/explain.cpp:
  bandwidth         the stream itself sets the time: agrees when the PDL call reaches
                    >= 85% of the read ceiling.
  launch and ramp   the fixed per-call cost is a large share of the call: agrees when PDL saves
                    >= 10% of the no-PDL time, or the PDL call is short (< 8 us, where the ~2 us
                    per call that PDL does not hide is at least a third of the transfer, explain's
                    own threshold for this limiter). A saving of more than 5 us per call is not
                    launch overlap (PDL_OVERLAP_MAX_US) and counts as none.
  grid, bytes in flight, issue, repeated loads, not modelled
                    the stream runs below the ceiling for a reason PDL cannot touch: agrees when
                    the PDL call reaches < 85% of the ceiling and PDL saves < 10%. ("not
                    modelled": measured below the ceiling by more than the model's largest
                    cost explains; only with a measured time. It also agrees, whatever PDL
                    saves, when explain of the same config without PDL, given or measuring the
                    no-PDL time, says not modelled too: the excess is there with and without
                    the overlap, so it is not the launch PDL hides.) A grid of fewer blocks than SMs
                    also agrees, whatever PDL saves, when the PDL call's rate stays within 1.1x
                    the share of the ceiling its blocks' SMs hold (blocks / SMs, GRID_SLACK):
                    the SMs without a block stream nothing, which caps the rate however much of
                    the short call launch and ramp take too (1024x4096 at M = 4 on 64 blocks of
                    132 SMs: 48.1% of the ceiling, the share 48.5%, PDL saving 14%).
  split-K fix-up    the partials and the last block's serial fix-up, a tail at the end of the
                    call that PDL overlaps with the next call as it does the launch: agrees when
                    the config splits K and the PDL call reaches < 85% of the ceiling (PDL's gain
                    cannot tell it from the launch).
A row agrees when its measurements satisfy the rule of the limiter explain names; "measured
points to" gives the first of bandwidth, launch and ramp, "stream below the ceiling" whose
rule holds, for comparison; "explain's time" is the measured time explain named the limiter
from (and where it came from), "-" with --model-only. The rule reads bench's figures in every
mode; with the default mode explain's bandwidth test is the rule's own (the PDL call's share of
the ceiling, the same bytes over the same time), so a row can still disagree when the model's
largest cost is one the PDL gain contradicts (launch and ramp while PDL saves < 10% of a long
call, or a stream limiter while PDL saves >= 10%). With --check the exit status is 1 when a row disagrees (2 for
unreadable input or a failed explain). Only the standard library is needed.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

BANDWIDTH_PCT = 85.0   # bandwidth: the PDL call at >= this % of the read ceiling
PDL_GAIN = 0.10        # launch and ramp: PDL saves >= this share of the no-PDL time ...
SHORT_US = 8.0         # ... or the PDL call is shorter than this
# Overlapping a launch, ramp and drain with the neighbouring calls saves a few microseconds per call
# (the model's launch terms: 2.8 us without PDL, 1.2 with). A larger saving is not that overlap but
# the PDL build's different code (x read by coherent loads after griddepcontrol.wait instead of
# the read-only path: fp32 at M >= 4, bound by issue, measured 0.3-33% apart on the H200), so it
# is no evidence for or against launch and ramp, and the rules then go by the ceiling alone.
PDL_OVERLAP_MAX_US = 5.0
STREAM_LIMITERS = ("grid", "bytes in flight", "issue", "repeated loads", "not modelled")
GRID_SLACK = 1.10      # grid: the call's rate within this factor of its blocks' SMs' share of the ceiling
DEFAULT_GPU = "NVIDIA H200/132sm/cc9.0"


class BadInput(Exception):
    pass


def rule_text():
    return (f"Agreement rule: **bandwidth** agrees when the PDL call reaches >= {BANDWIDTH_PCT:.0f}% of the read "
            f"ceiling; **launch and ramp** when PDL saves >= {100 * PDL_GAIN:.0f}% of the no-PDL time or the PDL "
            f"call takes < {SHORT_US:.0f} us; **grid**, **bytes in flight**, **issue**, **repeated loads** and **not modelled** when the PDL call reaches "
            f"< {BANDWIDTH_PCT:.0f}% of the ceiling and PDL saves < {100 * PDL_GAIN:.0f}% (**grid** of fewer blocks than SMs also "
            f"when the call's rate stays within {GRID_SLACK:.1f}x the share of the ceiling its blocks' SMs hold, whatever PDL saves); **not modelled** also when explain of the config without PDL says not modelled too; **split-K fix-up** when the "
            f"config splits K and the PDL call reaches < {BANDWIDTH_PCT:.0f}%. PDL gain = (no-PDL - PDL) "
            f"/ no-PDL, graph mode; % of ceiling is bench's, against the ceiling it measured.")


def _is_no_pdl(name):
    n = name.lower().replace("_", " ").replace("-", " ")
    return n.startswith("tuned") and ("no pdl" in n or "nopdl" in n or "without pdl" in n)


def rows_of(doc, batches=(1, 8)):
    """The measured rows of a bench --json document (a dict): one per shape at each M in batches."""
    if not isinstance(doc, dict) or not isinstance(doc.get("shapes"), list):
        raise BadInput("not a gemvtune bench --json document (no 'shapes' list)")
    ceiling = doc.get("ceiling_gbps")
    dtype = str(doc.get("dtype", "bf16"))
    weights = str(doc.get("weights", "dense"))
    rows = []
    for entry in doc["shapes"]:
        try:
            shape = str(entry["shape"]).lower()
            n, k = (int(x) for x in shape.split("x"))
            m = int(entry.get("batch", 1))
        except (KeyError, ValueError, TypeError, AttributeError) as e:
            raise BadInput(f"bad shape entry {entry!r}: {e}") from None
        if m not in batches:
            continue
        variants = entry.get("variants", [])
        tuned = next((v for v in variants if v.get("variant") == "tuned"), None)
        no_pdl = next((v for v in variants if _is_no_pdl(str(v.get("variant", "")))), None)
        if tuned is None:
            raise BadInput(f"{shape} at M = {m} has no 'tuned' variant")
        try:
            config = str(tuned["config"])
            tuned_us = float(tuned["graph_us"])
            pct = tuned.get("pct_of_ceiling")
            if pct is None:
                pct = 100 * float(tuned["graph_gbps"]) / float(ceiling) if ceiling else None
            pdl = "pdl" in config.split("_")
            # A winner without PDL is its own no-PDL figure; bench then records no "no PDL" variant.
            no_pdl_us = float(no_pdl["graph_us"]) if no_pdl and pdl else None if pdl else tuned_us
            row = {"shape": f"{n}x{k}", "n": n, "k": k, "m": m, "dtype": dtype, "weights": weights,
                   "config": config, "tuned_us": tuned_us, "pdl_us": tuned_us if pdl else None,
                   "no_pdl_us": no_pdl_us, "pct": None if pct is None else float(pct),
                   "no_pdl_config": str(no_pdl["config"]) if no_pdl and pdl and no_pdl.get("config") else None}
        except (KeyError, ValueError, TypeError) as e:
            raise BadInput(f"{shape} at M = {m}: bad tuned or no-PDL variant: {e}") from None
        row["gain"] = ((row["no_pdl_us"] - row["pdl_us"]) / row["no_pdl_us"]
                       if row["pdl_us"] is not None and row["no_pdl_us"] else None)
        rows.append(row)
    return rows


def _rules(row):
    """Which measured kinds hold for a row: {kind: True/False/None (unknown)}."""
    pct, gain, us = row["pct"], row["gain"], row["tuned_us"]
    if gain is not None and row["no_pdl_us"] - row["pdl_us"] > PDL_OVERLAP_MAX_US:
        gain = 0.0  # not launch overlap (PDL_OVERLAP_MAX_US): the ceiling alone decides
    bandwidth = None if pct is None else pct >= BANDWIDTH_PCT
    if us < SHORT_US or (gain is not None and gain >= PDL_GAIN):
        launch = True
    else:
        launch = None if gain is None else False
    if pct is not None and pct >= BANDWIDTH_PCT or gain is not None and gain >= PDL_GAIN:
        stream = False
    elif pct is None or gain is None:
        stream = None
    else:
        stream = True
    return {"bandwidth": bandwidth, "launch and ramp": launch, "stream": stream}


def measured_points_to(row):
    r = _rules(row)
    for kind, label in (("bandwidth", "bandwidth"), ("launch and ramp", "launch and ramp"),
                        ("stream", "stream below the ceiling")):
        if r[kind]:
            return label
    return "?"


def agreement(limiter, row):
    """(True/False/None, why) for explain's limiter against the row's measurements."""
    r = _rules(row)
    pct = "-" if row["pct"] is None else f"{row['pct']:.1f}%"
    gain = "-" if row["gain"] is None else f"{100 * row['gain']:.1f}%"
    if limiter == "bandwidth":
        ok = r["bandwidth"]
        why = f"{pct} of the ceiling {'>=' if ok else '<'} {BANDWIDTH_PCT:.0f}%"
    elif limiter == "launch and ramp":
        ok = r["launch and ramp"]
        why = (f"PDL saves {gain}, {'PDL' if row['pdl_us'] is not None else 'tuned'} call {row['tuned_us']:.2f} us" +
               ("" if ok else f" (needs >= {100 * PDL_GAIN:.0f}% or < {SHORT_US:.0f} us)"))
    elif limiter in STREAM_LIMITERS:
        ok = r["stream"]
        why = f"{pct} of the ceiling, PDL saves {gain}"
        blocks, sms = row.get("grid_blocks"), row.get("sm_count")
        if limiter == "grid" and ok is not True and blocks and sms and blocks < sms and row["pct"] is not None:
            share = 100.0 * blocks / sms
            ok = row["pct"] < BANDWIDTH_PCT and row["pct"] <= GRID_SLACK * share
            why += f", {blocks} blocks hold {share:.1f}% of the {sms} SMs"
            if not ok:
                why += f" (needs < {BANDWIDTH_PCT:.0f}% and <= {GRID_SLACK:.1f}x that share, or PDL < {100 * PDL_GAIN:.0f}%)"
        elif limiter == "not modelled" and ok is not True and row.get("no_pdl_limiter") and row["pct"] is not None:
            persists = row["no_pdl_limiter"] == "not modelled"
            ok = row["pct"] < BANDWIDTH_PCT and persists
            why += f", without PDL explain says {row['no_pdl_limiter']}"
            if not ok:
                why += f" (needs < {BANDWIDTH_PCT:.0f}% and not modelled without PDL too, or PDL < {100 * PDL_GAIN:.0f}%)"
        elif ok is False:
            why += f" (needs < {BANDWIDTH_PCT:.0f}% and < {100 * PDL_GAIN:.0f}%)"
    elif limiter == "split-K fix-up":
        splits = "_sk1_" not in row.get("config", "_sk1_")
        ok = None if r["bandwidth"] is None else (splits and not r["bandwidth"])
        why = f"{pct} of the ceiling, " + ("K split" if splits else "K not split")
        if ok is False:
            why += f" (needs a split and < {BANDWIDTH_PCT:.0f}%)"
    else:
        return None, f"unknown limiter {limiter!r}"
    if ok is None:
        why += " (a figure is missing)"
    return ok, why


MODES = ("measured", "model", "device")


def model_limiter(x):
    """The limiter the model alone names, from explain --json: bandwidth when the stream at the
    ceiling is >= 85% of the predicted time, else the model's largest cost. An explain that
    predates these fields named the model's limiter itself."""
    if x.get("limiter_basis", "model") == "model":
        return x["limiter"]
    try:
        share, largest = float(x["model_stream_share"]), str(x["model_largest_cost"])
    except (KeyError, TypeError, ValueError):
        raise BadInput("explain measured but gave no model_stream_share and model_largest_cost") from None
    return "bandwidth" if share >= BANDWIDTH_PCT / 100 else largest


def check(rows, explain_fn, mode="measured"):
    """Adds explain's answer to each row. explain_fn(shape, m, config, dtype, weights, measured_us
    [, no_pdl_us=T2]) -> explain's --json dict; measured_us is the row's tuned (PDL) time in mode
    "measured", else None, and no_pdl_us its no-PDL time there when the winner has PDL and the
    bench timed its twin.
    mode "model": the model's own limiter; "device": explain must have measured on the GPU."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}")
    for row in rows:
        where = f"{row['shape']} M = {row['m']}"
        given = row["tuned_us"] if mode == "measured" else None
        # The bench's no-PDL time of a PDL winner goes with it: what PDL saves decides launch and
        # ramp in explain as on the GPU, where explain times that twin itself.
        twin = ({"no_pdl_us": row["no_pdl_us"]}
                if mode == "measured" and row["pdl_us"] is not None and row["no_pdl_us"] is not None else {})
        x = explain_fn(row["shape"], row["m"], row["config"], row["dtype"], row["weights"], given, **twin)
        if not isinstance(x, dict) or "limiter" not in x or "model" not in x:
            raise BadInput(f"{where}: explain gave no limiter")
        for key in ("config", "dtype", "weights"):
            if x.get(key) not in (None, row[key]):
                raise BadInput(f"{where}: explain explained {key} {x.get(key)}, not {row[key]}")
        measured = x.get("measured") if isinstance(x.get("measured"), dict) else None
        row["explain_us"], row["explain_source"] = None, "model only"
        if mode == "model":
            row["limiter"] = model_limiter(x)
        else:
            if measured is None or x.get("limiter_basis") != "measured":
                why = x.get("measured_skipped") or "no measured time in its output (an explain without --measured-us?)"
                raise BadInput(f"{where}: explain did not name the limiter from a measurement: {why}")
            try:
                row["explain_us"] = float(measured["us"])
            except (KeyError, TypeError, ValueError):
                raise BadInput(f"{where}: explain's measured time is unreadable: {measured!r}") from None
            if mode == "measured" and abs(row["explain_us"] - given) > 1e-9 * max(1.0, given):
                raise BadInput(f"{where}: explain used {row['explain_us']} us, not the {given} us given")
            row["explain_source"] = "given" if mode == "measured" else "measured by explain"
            row["limiter"] = x["limiter"]
        # "not modelled" with PDL: is the excess there without PDL too? (agreement())
        if row["limiter"] == "not modelled" and row.get("no_pdl_config") and row["no_pdl_us"] is not None:
            given_no_pdl = row["no_pdl_us"] if mode == "measured" else None
            x2 = explain_fn(row["shape"], row["m"], row["no_pdl_config"], row["dtype"], row["weights"], given_no_pdl)
            if not isinstance(x2, dict) or "limiter" not in x2:
                raise BadInput(f"{where}: explain of {row['no_pdl_config']} gave no limiter")
            row["no_pdl_limiter"] = model_limiter(x2) if mode == "model" else x2["limiter"]
        grid = x.get("grid") if isinstance(x.get("grid"), dict) else {}
        row["grid_blocks"], row["sm_count"] = grid.get("blocks"), grid.get("sm_count")
        row["verdict"] = x.get("verdict", "")
        row["model_us"] = float(x["model"]["time_us"])
        little = x.get("little", {})
        row["explain_ceiling"] = little.get("read_ceiling_gbps")
        row["ceiling_source"] = little.get("ceiling_source", "")
        row["agrees"], row["why"] = agreement(row["limiter"], row)
        row["measured"] = measured_points_to(row)
    return rows


def _f(x, spec, missing="-"):
    return missing if x is None else format(x, spec)


def render(rows, title=None):
    lines = []
    if title:
        lines += [title, ""]
    ceilings = sorted({(r.get("explain_ceiling"), r.get("ceiling_source", "")) for r in rows},
                      key=lambda c: (c[0] is None, c[0] or 0, c[1]))
    for gbps, source in ceilings:
        lines.append(f"explain's read ceiling: {_f(gbps, '.0f')} GB/s ({source or 'not given'}).")
    lines += [rule_text(), ""]
    head = ["shape (N x K)", "M", "config", "explain's limiter", "model us", "explain's time", "PDL us", "no-PDL us",
            "PDL gain", "% of ceiling", "measured points to", "agrees", "why"]
    lines += ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    for r in rows:
        agrees = {True: "yes", False: "**no**", None: "?"}[r["agrees"]]
        explain_time = ("-" if r.get("explain_us") is None
                        else f"{r['explain_us']:.2f} us ({r.get('explain_source', '?')})")
        cells = [r["shape"], str(r["m"]), f"`{r['config']}`", r["limiter"], f"{r['model_us']:.2f}", explain_time,
                 _f(r["pdl_us"], ".2f"), _f(r["no_pdl_us"], ".2f"),
                 "-" if r["gain"] is None else f"{100 * r['gain']:.1f}%", _f(r["pct"], ".1f"), r["measured"],
                 agrees, r["why"]]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for m in sorted({r["m"] for r in rows}):
        at_m = [r for r in rows if r["m"] == m]
        bad = [r for r in at_m if r["agrees"] is False]
        unknown = [r for r in at_m if r["agrees"] is None]
        text = f"M = {m}: explain agrees with the measurements on {sum(r['agrees'] is True for r in at_m)} of {len(at_m)} shapes"
        if bad:
            text += "; disagrees on " + ", ".join(f"{r['shape']} ({r['limiter']})" for r in bad)
        if unknown:
            text += "; cannot tell on " + ", ".join(r["shape"] for r in unknown)
        lines.append(text)
    return "\n".join(lines) + "\n"


def parse_gpu_key(key):
    """'NVIDIA H200/132sm/cc9.0' -> the gpu object of a `gemvtune export` document."""
    try:
        name, sms, cc = key.rsplit("/", 2)
        if not sms.endswith("sm") or not cc.startswith("cc"):
            raise ValueError
        major, minor = cc[2:].split(".")
        return {"name": name, "sm_count": int(sms[:-2]), "cc_major": int(major), "cc_minor": int(minor)}
    except ValueError:
        raise BadInput(f"bad GPU key {key!r}: expected NAME/132sm/cc9.0") from None


def peak_document(gpu_key, gbps, driver_version=0):
    """A `gemvtune import` document holding only a read ceiling for gpu_key."""
    return {"format": "gemvtune-cache", "format_version": 2, "tuned": [],
            "peaks": [{"gpu": parse_gpu_key(gpu_key), "gbps": float(gbps), "bytes": 1,
                       "driver_version": int(driver_version), "timestamp": 0}]}


def _run(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BadInput(f"{' '.join(cmd)}: {e}") from None


def cli_explain(cli, gpu_key, db, own_db=True):
    """explain_fn that runs `CLI explain --json` with --db (a cache holding only a peak, or none, or
    with --on-device the bench's cache), with --gpu unless gpu_key is None (explain then reads the
    device and measures on it) and --measured-us when given a time. own_db: db is this script's
    temporary one-peak cache, whose path is not worth printing."""
    def explain(shape, m, config, dtype="bf16", weights="dense", measured_us=None, no_pdl_us=None):
        cmd = [cli, "explain", "--json", "--shape", shape, "--batch", str(m), "--config", config,
               "--dtype", dtype, "--weights", weights, "--db", db]
        if gpu_key is not None:
            cmd += ["--gpu", gpu_key]
        if measured_us is not None:
            cmd += ["--measured-us", repr(float(measured_us))]
            if no_pdl_us is not None:
                cmd += ["--measured-no-pdl-us", repr(float(no_pdl_us))]
        r = _run(cmd)
        try:
            x = json.loads(r.stdout)
        except ValueError:
            raise BadInput(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip() or r.stdout.strip()}") from None
        little = x.get("little") if isinstance(x, dict) else None
        if own_db and isinstance(little, dict) and isinstance(little.get("ceiling_source"), str):  # no temporary path
            little["ceiling_source"] = little["ceiling_source"].replace(db, "a one-peak cache made by this script")
        return x
    return explain


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("bench", help="a gemvtune bench --json output with 'tuned' and 'tuned, no PDL' variants")
    p.add_argument("--cli", required=True, help="the gemvtune executable (build/cli/gemvtune)")
    p.add_argument("--gpu", help=f"GPU model to explain for (default {DEFAULT_GPU!r}; not with --on-device)")
    p.add_argument("--batch", default="1,8", help="comma-separated M values (default 1,8)")
    p.add_argument("--ceiling", choices=("bench", "model"),
                   help="give explain the ceiling bench measured (default) or keep the model's (not with --on-device)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--model-only", action="store_true",
                      help="the model's limiter: do not give explain the bench's measured time (--measured-us)")
    mode.add_argument("--on-device", action="store_true",
                      help="run explain on this machine's GPU (device 0) with --db CACHE, without --gpu: explain "
                           "measures each config itself")
    p.add_argument("--db", help="with --on-device: the cache bench tuned into (its configs' GPU and read ceiling)")
    p.add_argument("--check", action="store_true", help="exit 1 when a row disagrees")
    args = p.parse_args(argv)
    if args.on_device:
        if not args.db:
            p.error("--on-device needs --db, the cache bench tuned into")
        if args.gpu is not None or args.ceiling is not None:
            p.error("--on-device reads the GPU and the read ceiling from the device and --db; drop --gpu and --ceiling")
    elif args.db is not None:
        p.error("--db is for --on-device (otherwise the script makes its own one-peak cache)")
    gpu = args.gpu or DEFAULT_GPU
    ceiling = args.ceiling or "bench"
    run_mode = "device" if args.on_device else "model" if args.model_only else "measured"
    try:
        try:
            batches = tuple(int(b) for b in args.batch.split(","))
        except ValueError:
            raise BadInput(f"bad --batch {args.batch!r}") from None
        try:
            with open(args.bench) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise BadInput(f"{args.bench}: {e}") from None
        rows = rows_of(doc, batches)
        if not rows:
            raise BadInput(f"{args.bench}: no shape at M = {args.batch}")
        if args.on_device:
            if not os.path.isfile(args.db):
                raise BadInput(f"--db {args.db}: no such cache file")
            check(rows, cli_explain(args.cli, None, args.db, own_db=False), "device")
        else:
            with tempfile.TemporaryDirectory(prefix="limiter_check") as tmp:
                db = os.path.join(tmp, "peak.sqlite")  # absent with --ceiling model: explain keeps its default
                if ceiling == "bench":
                    if not doc.get("ceiling_gbps"):
                        raise BadInput(f"{args.bench}: no ceiling_gbps; use --ceiling model")
                    src = os.path.join(tmp, "peak.json")
                    with open(src, "w") as f:
                        json.dump(peak_document(gpu, doc["ceiling_gbps"], doc.get("driver_version", 0)), f)
                    r = _run([args.cli, "import", src, "--db", db])
                    if r.returncode != 0:
                        raise BadInput(f"gemvtune import of the ceiling failed: {r.stderr.strip()}")
                check(rows, cli_explain(args.cli, gpu, db), run_mode)
    except BadInput as e:
        print(f"limiter_check: {e}", file=sys.stderr)
        return 2
    how = {"measured": f"`gemvtune explain --gpu '{gpu}' --measured-us` (the bench's tuned PDL time)",
           "model": f"`gemvtune explain --gpu '{gpu}'`, the model's limiter alone (--model-only)",
           "device": f"`gemvtune explain --db {args.db}` measuring on this machine's GPU (--on-device)"}[run_mode]
    title = (f"Limiter check: {how} against {os.path.basename(args.bench)} "
             f"({doc.get('gpu', '?')}, {doc.get('dtype', '?')}, graph mode)")
    command = "python3 scripts/limiter_check.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    sys.stdout.write(render(rows, title + "\n\n`" + command + "`"))
    return 1 if args.check and any(r["agrees"] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
