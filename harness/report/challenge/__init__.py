"""Your chunker against the papers' baselines: ``chunkbench challenge CHUNKER``.

:mod:`.challenger` reads what the user names (a config choice, a class by import path);
:mod:`.rows` adds its rows to a paper table as the table file's ``challenge`` block says;
:mod:`.significance` compares it with each baseline on the same questions; :mod:`.report`
writes the report; :mod:`.run` runs it all through the normal grid, cache and MLflow record,
or :mod:`.cluster` as a launcher's jobs; :mod:`.own_data` builds the table of the user's data.
"""
