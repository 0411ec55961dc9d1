"""Dedup at corpus scale: the distributed engine on Dask (`engine.py`), which gives the one-process
engine's clusters (flows/curate/dedup.py) with no stage on the driver.

`sources.py` plans an input's partitions from metadata, `ops.py` is each stage's partition function,
`components.py` the large-star / small-star connected components, `report.py` the cluster-size report
and the `max_cluster` guard both engines share.

Not a flow: the engine of `m1 curate dedup --runner dask` and of the curation flow's MinHash step on Dask.
"""
