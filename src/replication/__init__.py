"""Running, judging and reporting the replication study around the `contrastive` algorithms, one
house per job, each importing only from the houses above it:

    run/      running the study: config (the params.yaml schema and its resolution into one file per
              stage), datasets, calibration (BatchNorm re-estimated), train (conditions over seeds, a
              checkpoint per rung), evaluate (every probe at each checkpoint)
    judge/    judging it: registry (analysis/claims.yaml's schema), registration, measure, gates,
              stats (numbers only), kinds, judge, robustness, dvc_files, and verdicts (the one home of
              every verdict rule and word)
    report/   rendering it: notebook, claims_view, page, figures, markdown, deviations, headroom
    cli/      the command line, `python -m replication VERB` (check, repro, status, exp, repro-all,
              repro-stage, register, relock, sequential, compare, readme, run-cost): imports from
              every house, and none imports it
    examples/ the source documents' printed examples, recomputed

io (atomic writes, the YAML loader) and schema (the strict base of both schemas) serve all three.
"""
