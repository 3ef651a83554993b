"""The runtime and the offline side on a GPU, from Python: plans launched on raw device
pointers, tune, query and peak into a temporary cache. Skips without a GPU; device memory is
allocated through PyTorch, so these skip without it too."""

import pytest

import gemvtune


def test_runtime_plans_and_launches(torch_cuda, db):
    torch = torch_cuda
    with gemvtune.Runtime(db, 0) as rt:
        plan = rt.plan(4096, 4096, "bf16")
        assert plan.config and plan.source.startswith("default"), plan
        assert (plan.m, plan.n, plan.k) == (1, 4096, 4096)
        again = rt.plan(4096, 4096, "bfloat16")
        assert again.config == plan.config
        with pytest.raises(gemvtune.InvalidArgument, match="outside 1..16"):
            rt.plan(4096, 4096, "bf16", m=17)
        batched = rt.plan(4096, 4096, "bf16", m=4)
        assert batched.m == 4
    # Plans outlive their runtime.
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) / 64
    x = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(4096, device="cuda", dtype=torch.bfloat16)
    plan.launch(w, x, y, torch.cuda.current_stream())
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.nn.functional.linear(x, w), atol=3e-2, rtol=2e-2)
    y.zero_()
    plan.launch(w.data_ptr(), x.data_ptr(), y.data_ptr(), torch.cuda.current_stream().cuda_stream, ld=4096, ldx=4096,
                ldy=4096)  # through gemvtune_plan_launch_ex
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.nn.functional.linear(x, w), atol=3e-2, rtol=2e-2)
    with pytest.raises(gemvtune.InvalidArgument):
        plan.launch(w, x, y, ld=100)  # ld < K
    with pytest.raises(gemvtune.InvalidArgument):
        plan.launch(0, x, y)  # null weights
    with pytest.raises(gemvtune.InvalidArgument, match="scales and zeros"):
        plan.launch(w, x, y, scales=w)
    plan.close()
    with pytest.raises(gemvtune.InvalidArgument, match="closed"):
        plan.launch(w, x, y)
    # Batch: 4 rows of x with a padded row stride, then 3 rows with the same plan.
    xs = torch.randn(4, 4096 + 64, device="cuda", dtype=torch.bfloat16)[:, :4096]
    ys = torch.zeros(4, 4096, device="cuda", dtype=torch.bfloat16)
    batched.launch(w, xs, ys, torch.cuda.current_stream(), ldx=xs.stride(0))
    torch.cuda.synchronize()
    torch.testing.assert_close(ys, torch.nn.functional.linear(xs, w), atol=3e-2, rtol=2e-2)
    ys.zero_()
    batched.launch(w, xs, ys, torch.cuda.current_stream(), ldx=xs.stride(0), m=3)
    torch.cuda.synchronize()
    torch.testing.assert_close(ys[:3], torch.nn.functional.linear(xs[:3], w), atol=3e-2, rtol=2e-2)
    assert ys[3].abs().max().item() == 0, "row 4 untouched at m = 3"
    with pytest.raises(gemvtune.InvalidArgument):
        batched.launch(w, xs, ys, ldx=xs.stride(0), m=5)


def test_launch_checks_tensors(torch_cuda, db):
    # Tensors are checked against the plan (a CPU tensor once passed a host pointer to the
    # kernel), and a 2-D tensor's stride(0) is its row stride unless one is given.
    torch = torch_cuda
    plan = gemvtune.Runtime(db, 0).plan(512, 1024, "bf16", m=2)
    wide = torch.randn(512, 1536, device="cuda", dtype=torch.bfloat16) / 32
    w = wide[:, :1024]  # a column slice: ld 1536
    x = torch.randn(2, 1024, device="cuda", dtype=torch.bfloat16)
    y = torch.zeros(2, 512, device="cuda", dtype=torch.bfloat16)
    plan.launch(w, x, y, torch.cuda.current_stream())
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.nn.functional.linear(x, w), atol=3e-2, rtol=2e-2)
    with pytest.raises(gemvtune.InvalidArgument, match="x is not on a CUDA device"):
        plan.launch(w, x.cpu(), y)
    with pytest.raises(gemvtune.InvalidArgument, match="x has dtype fp16, the plan needs bf16"):
        plan.launch(w, x.half(), y)
    with pytest.raises(gemvtune.InvalidArgument, match="y has 1 rows, the launch needs 2"):
        plan.launch(w, x, y[:1])
    with pytest.raises(gemvtune.InvalidArgument, match="w has stride 512 along its last dimension"):
        plan.launch(torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16).t(), x, y)  # (512, 1024), K strided
    plan.close()


def test_runtime_options(torch_cuda, tmp_path):
    rt = gemvtune.Runtime(str(tmp_path / "c.sqlite"), kernel_store=False, split_k=False, pdl=False)
    plan = rt.plan(1024, 4096, "fp16")
    assert plan.stream_concurrent, "split_k=False: no plan shares a split-K workspace"
    assert not (tmp_path / "c.sqlite.kernels").exists()
    with pytest.raises(gemvtune.GemvtuneError):
        gemvtune.Runtime(device=999)


def test_tune_query_and_list(gpu, db):
    events = []
    result = gemvtune.tune(["1024x4096"], db=db, progress=events.append)  # M = 1
    assert (result["tuned"], result["skipped"], result["failed"]) == (1, 0, 0), result
    shape = result["shapes"][0]
    assert shape["status"] == "tuned" and shape["config"] and shape["gbps"] > 0
    assert result["phases"] == shape["phases"] and result["phases"]["timing"] > 0, "one job: its phases are the run's"
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and "progress" in kinds and kinds[-1] == "outcome"

    answer = gemvtune.query("1024x4096", db=db)
    assert answer["source"] == "exact" and answer["config"] == shape["config"]
    listed = gemvtune.list_cache(db)
    assert len(listed["tuned"]) == 1 and listed["peaks"], "tuning measures the read ceiling first"

    again = gemvtune.tune(["1024x4096"], db=db, progress=False)
    assert (again["tuned"], again["skipped"]) == (0, 1)
    plan = gemvtune.Runtime(db).plan(1024, 4096, "bf16")
    assert plan.source == "exact" and plan.config == shape["config"]


def test_peak(gpu, db):
    first = gemvtune.peak(db=db)
    assert first["gbps"] > 100 and first["previous_gbps"] is None
    second = gemvtune.peak(db=db)
    assert second["previous_gbps"] == first["gbps"]
    assert gemvtune.device_count() >= 1
