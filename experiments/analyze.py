"""Stage analyze: judge every claim in analysis/claims.yaml against the pipeline's results."""
from contrastive.claims import judge_all, load_registry, summary
from contrastive.config import load_params
from contrastive.io import write_json

if __name__ == "__main__":
    load_params()
    judged = judge_all(load_registry("analysis/claims.yaml"))
    write_json("reports/claims.json", judged)
    write_json("reports/summary.json", summary(judged))
