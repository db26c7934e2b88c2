"""A browsable site of everything results/ publishes (``chunkbench site``, ``make site``): static
HTML that opens from disk (relative links, no server, no network), generated from the files alone.

- :mod:`.sources`: what results/ publishes (paper tables per scale, Pareto plots, challenge reports,
  the leaderboard, other reports), found on disk
- :mod:`.pages`: a paper table's page (ours beside the paper's, stand-ins and deviations marked,
  caption, figure, the runs behind it), a plot's, a markdown report's
- :mod:`.index`: the index page
- :mod:`.markdown`: markdown to HTML (markdown-it-py) with the links rewritten for the site
- :mod:`.templates`: the page skeleton, stylesheet and the sort script
- :mod:`.links`: the link checker (every href/src opens a file of the site)
- :mod:`.build`: all of it into a folder, deterministic
"""

from harness.report.site.build import Built, build, render

__all__ = ["Built", "build", "render"]
