"""The chunking leaderboard (``chunkbench leaderboard``, ``make leaderboard``): every chunker that needs
no LLM, ChunkBench's own and the libraries' through the adapters, at two sizes, on a fixed, versioned
suite of public datasets (``configs/suite/<name>.yaml``), ranked with intervals, paired tests and cost.

- :mod:`.suite`: the suite file read and expressed as a table spec (rows: contenders, groups: datasets);
- :mod:`.measures`: scores, ranks, paired comparisons, the win/tie/loss matrix and cost, from the record;
- :mod:`.write`: ``results/leaderboard/`` (README.md, leaderboard.csv, matrix.csv, pareto.png);
- :mod:`.run`: the suite's missing points run, then the leaderboard written.
"""
