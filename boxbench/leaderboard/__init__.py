"""The leaderboard: every number a page shows, materialized when a run is published.

Publishing (boxbench.publishing) materializes medians, intervals, tails, stage bars, derived
views, workload values, scores, ranks and labels into Aggregate rows, so requests never recompute
statistics. The data flows ORM -> pandas -> stats -> Aggregate rows:

- materialize: every page rebuilt and stored at once (publishing calls it)
- sources: which published run feeds each (benchmark, provider), its image digest, ranking floor
- cells: a benchmark's trials loaded and grouped by (unit, provider)
- boards: the benchmark page (All view) and its unit pages
- pages: the overview and the provider pages
"""
