"""The study's one command line, `python -m replication <verb>` (or `replication <verb>` once the
package is installed): the day-to-day commands, each with its own --help. main.py reads the verb and
hands its options to the module that does the work; `make` entries are aliases of these verbs.

    check        make's check: paths inside the repository, params.yaml, the committed files
    repro        bring every result up to date, never retraining silently (--retrain)
    status       what is truly stale; runs nothing
    exp          an experiment (dvc exp run -S) behind repro's guard
    repro-all    every stage from scratch, timed (timing.py)
    repro-stage  one stage from scratch, timed
    register     freeze the rules before a full run, or amend the registration
    relock       record a code edit that changes no result in dvc.lock
    sequential   stage 2 of a registered run: the sequential rule's choice
    compare      what moved between two judged runs
    readme       the generated blocks of README.md and docs/
    run-cost     what the registered run will cost, before it is run

The house above run/, judge/ and report/: it may import from any of them, and none imports it. The
pilots (one-off measurements behind a decision) live apart, in tools/ at the repository's root.
"""
