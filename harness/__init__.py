"""ChunkBench: a reproducible benchmark harness for document chunking in RAG."""

import os

# MLflow's usage telemetry is off unless the user turns it on: a benchmark run sends nothing home,
# and the telemetry thread sets and unsets a variable in os.environ while the run reads the
# environment (secret masking), a race that failed a run's recording with KeyError under load.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

# One MKL code path on every x86 CPU (Conditional Numerical Reproducibility): left to choose, MKL's
# AVX-512 GEMM computes a row differently with the number of rows in the matrix, so an embedding
# would depend on the texts encoded beside it and a cached vector on which run computed it first;
# the AVX2 path, kept strict, computes each row alike on AVX2 and AVX-512 machines. Read when MKL
# starts, so before torch is imported; a user's own MKL_CBWR is kept.
os.environ.setdefault("MKL_CBWR", "AVX2,STRICT")

# The Python API (harness.api), loaded on first use: `import harness` stays as cheap as a CLI start.
_API = {"Document": "harness.types", "Query": "harness.types", "Chunk": "harness.types",
        "Chunker": "harness.chunking.base", "check_chunks": "harness.chunking.base",
        "evaluate": "harness.api", "load_runs": "harness.api", "Result": "harness.api"}
__all__ = sorted(_API)


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_API[name]), name)
