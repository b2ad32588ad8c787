"""Stage analyze: judge every claim in analysis/claims.yaml against the pipeline's results.

A registry mistake, or a file that differs from the registration record without a logged
amendment, is a configuration error (exit 2); a missing, empty or partial result file stops the
stage with the command that rewrites it (exit 1). Nothing is written on an error.
"""
import sys

from replication import registration
from replication.config import read_resolved
from replication.dvc_files import write_dvc_files
from replication.io import write_json
from replication.judging import judge_all, summary
from replication.measure import InputError, check_inputs
from replication.registry import RegistryError, load_registry


def judged_claims():
    """Every claim judged; under a registration record, each claim amended after it also judged by
    its frozen rule (`frozen_verdict`)."""
    conditions = read_resolved("conditions")
    rules, claims = load_registry("analysis/claims.yaml", conditions["conditions"])
    record = registration.load()
    frozen = registration.check(record, rules, claims) if record else {}
    check_inputs(conditions)
    judged = judge_all(claims, rules=rules, registered_on=record and record["date"])
    for out in judged:
        if out["id"] in frozen:
            out["frozen_verdict"] = judge_all([frozen[out["id"]]], rules=record["rules"])[0]["verdict"]
    return judged, record


def main():
    try:
        judged, record = judged_claims()
    except (RegistryError, registration.RegistrationError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    write_json("reports/claims.json", judged)
    write_json("reports/summary.json", {**summary(judged), "registered_on": record and record["date"]})
    write_dvc_files(judged)


if __name__ == "__main__":
    main()
