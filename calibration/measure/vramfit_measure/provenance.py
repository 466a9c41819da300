"""Where a measurement ran: the GPU, driver and CUDA as torch and NVML see them, and the version
of every package that shapes the memory (torch, transformers, peft, accelerate, bitsandbytes,
torchao, flash-attn); a package not installed is `null`."""

from __future__ import annotations

import importlib.metadata
import platform

import torch

PACKAGES = ("torch", "transformers", "peft", "accelerate", "safetensors", "bitsandbytes", "torchao", "flash-attn", "nvidia-ml-py")


def version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def nvml_driver() -> str | None:
    """The driver version through nvidia-ml-py, where it and a driver are present."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            driver = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return driver.decode() if isinstance(driver, bytes) else driver
    except Exception:  # no nvidia-ml-py, no driver: the figure is unknown, not an error
        return None


def provenance() -> dict:
    cuda = torch.cuda.is_available()
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": {p: version(p) for p in PACKAGES},
        "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "gpu": torch.cuda.get_device_name() if cuda else None,
        "gpu_capability": ".".join(map(str, torch.cuda.get_device_capability())) if cuda else None,
        "gpu_total_bytes": torch.cuda.get_device_properties(0).total_memory if cuda else None,
        "driver": nvml_driver(),
    }
