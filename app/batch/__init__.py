"""`convert batch`: many conversions from a manifest, on Dask workers, with CI reports.

    manifest.py  read and check the manifest (TOML/YAML), every problem with its line
    runner.py    select entries, make one task per entry x target, collect results, write reports
    shared.py    the names and the worker environment cluster.py and worker.py share
    cluster.py   run tasks on Dask (LocalCluster or --scheduler): timeouts, crashes, worker restarts
    worker.py    what runs in a worker: its setup (cache, imports, memory resource) and the task
    cache.py     the per-worker parse / reference cache given to convert.pipeline.run
    report.py    batch-report.json, JUnit XML, progress lines, the exit code

Nothing here imports click or a framework at import time; `distributed` is imported when a run starts.
"""

from .cluster import INSTALL_HINT, DaskMissing, SchedulerUnreachable
from .manifest import Entry, ManifestError, load, parse_shard
from .runner import DEFAULT_TIMEOUT, BatchOptions, main, run_batch, select

__all__ = ["BatchOptions", "DEFAULT_TIMEOUT", "DaskMissing", "Entry", "INSTALL_HINT", "ManifestError",
           "SchedulerUnreachable", "load", "main", "parse_shard", "run_batch", "select"]
