import pstats, sys
for r in (0, 1):
    p = pstats.Stats(f"/tmp/prof.{r}")
    p.sort_stats("cumtime").print_stats("run_sources_ranks|merge_into|wait|run_sources|msbfs_batch|_download|allreduce|_partials|Barrier|counter|free|device_graph|poke|advance")
