"""``chunkbench synth``: an evaluation set from the user's documents by Chroma's method (Smith &
Troynikov, 2024), and ``chunkbench agreement``: does it rank chunkers as published questions do?

documents.py (the folder) -> slices.py (where to ask) -> prompt.py (the report's prompt) ->
proposals.py (reading a reply) -> evidence.py (excerpts as exact spans) -> filters.py (relevance,
duplicates) -> output.py (the local format and manifest, written whole); generate.py runs them.
"""
