"""Running and judging the replication study around the `contrastive` algorithms.

Modules: config (the params.yaml schema and its resolution into one file per stage), datasets
(generated datasets saved with sha256 manifests), runs (conditions over seeds: training with a
checkpoint per rung), evaluation (every probe at each checkpoint), calibration (BatchNorm statistics
re-estimated on training images before the probes), io (atomic writes), stats (intervals and
verdict rules), claims (judging analysis/claims.yaml), render (the report's tables, plots and HTML),
examples (the source documents' printed examples, recomputed).
"""
