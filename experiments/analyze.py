"""Stage analyze: judge every claim in analysis/claims.yaml against the pipeline's results.

A claim that names a condition params.yaml does not define is a configuration error (exit 2); a
result file that cannot be read stops the stage with the command that regenerates it (exit 1).
"""
import sys

from replication.claims import ClaimError, ResultFileError, judge_all, load_registry, summary
from replication.config import read_resolved
from replication.io import write_json

if __name__ == "__main__":
    conditions = read_resolved("conditions")["conditions"]
    try:
        rules, claims = load_registry("analysis/claims.yaml", conditions)
        judged = judge_all(claims, rules=rules)
    except ClaimError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    except ResultFileError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    write_json("reports/claims.json", judged)
    write_json("reports/summary.json", summary(judged))
