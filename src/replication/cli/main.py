"""`python -m replication <verb> [options]`: one parser, with a subparser for each verb. A verb's own
options are declared by the module that runs it (its add_arguments), which is imported only when the
verb is asked for, so that `--help` and a quick verb do not load torch. A usage error (an unknown verb,
an unknown option) is one line on stderr and exit status 2."""
import argparse
import importlib
import sys
from pathlib import Path

# verb: (module under replication.cli, its function that declares the options or None, the one that runs
# it, its line in the list of verbs, what it does: its --help)
VERBS = {
    "check": ("check", None, "run",
              "make's check, before any DVC command",
              "make's check before DVC or a tool reads anything: no path leads out of the repository, "
              "params.yaml, analysis/stage_two.yaml and dvc.lock pass their checks, the committed results "
              "parse. The first problem is one line on stderr and exit status 2; nothing is written."),
    "repro": ("repro", "add_arguments", "run",
              "bring every result up to date, never retraining silently",
              "Bring every result up to date with the code and params (dvc repro --allow-missing), and never "
              "retrain silently: what this clone lacks (datasets, checkpoints) is retrained only with --retrain."),
    "status": ("repro", None, "run_status",
               "what is truly stale; runs nothing",
               "What is truly stale, in a few lines (`dvc status` lists every file a clone lacks); runs nothing."),
    "exp": ("repro", "add_exp_arguments", "run_exp",
            "an experiment (dvc exp run -S) behind repro's guard",
            "An experiment behind repro's guard: `dvc exp run -S KEY=VALUE`, planned first with params.yaml put "
            "back afterwards, and run only when it retrains nothing this clone lacks, or with --retrain."),
    "repro-all": ("timing", "add_dvc_argument", "run_all",
                  "every stage from scratch, timed",
                  "Every stage from scratch (dvc repro -f), timed: writes reports/repro_timing.json, and each "
                  "stage's time into reports/stage_times.json, with this CPU's model."),
    "repro-stage": ("timing", "add_stage_arguments", "run_stage",
                    "one stage from scratch, timed",
                    "One stage from scratch (dvc repro -f -s STAGE), timed into reports/stage_times.json with "
                    "this CPU's model; a STAGE that `dvc stage list` does not name is refused in one line."),
    "register": ("register", "add_arguments", "run",
                 "freeze the rules before a full run, or amend the registration",
                 "Freeze the rules before a full run (analysis/registration.json), or amend the latest "
                 "registration: judging code that moved without moving a verdict, or a rule change."),
    "relock": ("relock", "add_arguments", "run",
               "record a code edit that changes no result in dvc.lock",
               "Record a code edit that changes no result in dvc.lock, without rerunning the stages it touches; "
               "without --write, list what it would record."),
    "sequential": ("sequential", "add_arguments", "run",
                   "stage 2 of a registered run: the sequential rule's choice",
                   "After stage 1 of a registered run: the contrasts the registered sequential rule gives further "
                   "seeds, and the stage-2 studies that run them; --write writes the choice, once."),
    "compare": ("compare", "add_arguments", "run",
                "what moved between two judged runs",
                "What moved between two judged runs: verdict changes, effect shifts and, with --causes, what "
                "changed in between to move each verdict."),
    "readme": ("readme", "add_arguments", "run",
               "rewrite the generated blocks of README.md and docs/",
               "Rewrite the generated blocks of README.md and docs/ from the files the pipeline wrote (never "
               "typed); --check only says whether a page is out of date."),
    "schedule": ("schedule", "add_arguments", "run",
                 "every stale run at once on a Dask cluster, then the stages",
                 "Every stale training run of every stage at once, then every stale evaluation, on a Dask "
                 "cluster (a local one by default: one single-threaded worker per core); DVC then runs the "
                 "stages, which take the runs done ahead and write their outputs and dvc.lock."),
    "run-cost": ("run_cost", "add_arguments", "run",
                 "what the registered run will cost, before it is run",
                 "What the registered run of params.yaml will cost on this CPU and on the slowest CPU seen, per "
                 "stage and with its sequential second stage at the registered cap, before it is run."),
}


class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line on stderr, exit status 2."""

    def error(self, message):
        self.exit(2, f"error: {self.prog}: {message}; see --help\n")


def prog():
    return "replication" if Path(sys.argv[0]).name == "replication" else "python -m replication"


def parser(verb=None):
    """The command line's parser; the options of `verb` (one of VERBS) declared by its module."""
    top = OneLineParser(prog=prog(), formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=20),
                        description="The replication study's day-to-day commands; "
                        "`VERB --help` says what each does and lists its options.")
    verbs = top.add_subparsers(dest="verb", metavar="VERB", required=True, parser_class=OneLineParser)
    for name, (module, declare, _, line, what) in VERBS.items():
        sub = verbs.add_parser(name, help=line, description=what)
        sub.set_defaults(parser=sub)
        if name == verb and declare:
            getattr(importlib.import_module(f"replication.cli.{module}"), declare)(sub)
    return top


def parse(argv):
    """The parsed command line: args.verb, the verb's options, and args.parser (its subparser, for the
    checks argparse cannot declare)."""
    return parser(argv[0] if argv and argv[0] in VERBS else None).parse_args(argv)


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    module, _, runs, _, _ = VERBS[args.verb]
    return getattr(importlib.import_module(f"replication.cli.{module}"), runs)(args)
