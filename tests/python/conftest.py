"""Shared set-up of the Python tests (tests/python/tests.cmake runs them under CTest).

With GEMVTUNE_LIBRARY set (CTest sets it to the build tree's libgemvtune.so) the package is
imported from the repository's python/ folder; without it, the installed package is tested.
GPU tests skip with the reason where there is no CUDA driver or GPU; torch tests skip where
PyTorch is not installed.
"""

import os
import sys

import pytest

if os.environ.get("GEMVTUNE_LIBRARY"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import gemvtune  # noqa: E402


def gpu_absent_reason():
    """None where a CUDA GPU can be used, else why not (the library's NoGpu message)."""
    try:
        return None if gemvtune.device_count() > 0 else "no CUDA device"
    except gemvtune.NoGpu as e:
        return str(e)


@pytest.fixture(scope="session")
def gpu():
    why = gpu_absent_reason()
    if why:
        pytest.skip(f"needs a CUDA GPU, none here: {why}")


@pytest.fixture(scope="session")
def torch():
    try:
        import torch
    except ImportError:
        pytest.skip("needs PyTorch, which is not installed here (the torch layer's tests run where it is)")
    return torch


@pytest.fixture(scope="session")
def torch_cuda(torch, gpu):
    if not torch.cuda.is_available():
        pytest.skip("needs PyTorch with CUDA; torch.cuda.is_available() is False")
    return torch


@pytest.fixture
def db(tmp_path):
    """A cache path in a fresh folder (the file does not exist yet)."""
    return str(tmp_path / "cache.sqlite")
