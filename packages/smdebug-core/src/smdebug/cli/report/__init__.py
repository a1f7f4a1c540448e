"""The pieces of ``smdebug report`` (the command itself is :mod:`smdebug.cli.report_cmd`).

- :mod:`.verdicts`: reads a rule runner result document defensively;
- :mod:`.lines`: reads the run's values into plot-ready lines, downsampled with extremes kept;
- :mod:`.content`: decides which sections a run (or several) gets and gathers their data;
- :mod:`.charts`: builds the interactive charts (Bokeh models);
- :mod:`.page`: assembles the self-contained HTML page.

Nothing here is imported by ``smdebug --help``; Bokeh is imported only when a page is drawn.
"""
