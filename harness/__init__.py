"""ChunkBench: a reproducible benchmark harness for document chunking in RAG."""

import os

# MLflow's usage telemetry is off unless the user turns it on: a benchmark run sends nothing home,
# and the telemetry thread sets and unsets a variable in os.environ while the run reads the
# environment (secret masking), a race that failed a run's recording with KeyError under load.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
