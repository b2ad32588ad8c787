"""Stage analyze: judge every claim in analysis/claims.yaml against the pipeline's results.

A registry mistake, a file that differs from the registration record without a logged amendment, or
judged code that gives other verdicts than its code amendment says is a configuration error (exit 2);
a missing, empty or partial result file stops the stage with the command that rewrites it (exit 1).
Nothing is written on an error.
"""
import _interpreter  # noqa: F401  (experiments/_interpreter.py: the project's interpreter, or one line)
import sys

from replication.io import stage_outputs, write_json
from replication.judge.dvc_files import write_dvc_files
from replication.judge.judge import judge_registry, summary
from replication.judge.measure import InputError
from replication.judge.record import claims_text, write_claims
from replication.judge.registration import RegistrationError, check_code_amendment, check_registered_code
from replication.judge.registry import RegistryError
from replication.judge.results import Results
from replication.run.config import read_resolved

OUTPUTS = ("reports/claims.json", "reports/summary.json", "reports/verdicts.json", "reports/metrics.json",
           "reports/plots")


def main():
    try:
        check_registered_code()
        judged, record = judge_registry(read_resolved("conditions"))
        check_code_amendment(claims_text(judged))
    except (RegistryError, RegistrationError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    with stage_outputs(*OUTPUTS, prune=["reports/plots"], together=True):
        write_claims(judged)
        counts = summary(judged)
        write_json("reports/summary.json", {**counts, "registered_on": record and record["date"]})
        # the literature's verdict counts alone, flat: dvc.yaml's only metrics file, so `dvc metrics show` fits a terminal
        write_json("reports/verdicts.json", counts["literature"]["verdicts"])
        write_dvc_files(judged, Results.load())


if __name__ == "__main__":
    main()
