"""The committed reports/claims.json, checked independently of the analysis code: intervals and
verdicts recomputed from the per-seed values it carries."""
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from replication.judge import sequential
from replication.cli.repro import registered_run_in_progress

CLAIMS = Path(__file__).resolve().parents[1] / "reports" / "claims.json"
REGISTRY = Path(__file__).resolve().parents[1] / "analysis" / "claims.yaml"
pytestmark = pytest.mark.skipif(not CLAIMS.exists(), reason="no committed reports/claims.json")
SHARED = yaml.safe_load((REGISTRY.parent / "rules.yaml").read_text())     # the rules and sections the claims share
RULES = SHARED["rules"]
ALPHA = RULES["alpha"]                                  # each one-sided test's level, as registered


def load():
    return json.loads(CLAIMS.read_text())


def ci95(x, alpha=ALPHA):
    """The (1 - 2 alpha) t-interval of the mean: claims.json's `ci95`, whatever the registered alpha."""
    x = np.asarray(x, float)
    half = stats.t.ppf(1 - alpha, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return x.mean() - half, x.mean() + half


EXAMPLES = {s["id"] for s in SHARED["sections"] if s.get("origin") == "document"}


def deciding_interval(d, claim):
    """The interval that decided a paired contrast over these seeds: under a registered sequential
    design, (1 - 2 alpha) at the alpha its look spends (its stage-1 or stage-2 boundary, or a best-of's
    held-out half's: tests/test_sequential.py); the plain one without a design, and for the documents'
    examples, which have their own seeds and one look."""
    rules = {k: v for k, v in RULES.items() if k != "sequential"} if claim["section"] in EXAMPLES else RULES
    return ci95(d, sequential.look(rules, len(d))["alpha"])


def test_every_arm_interval_recomputes():
    checked = 0
    for c in load():
        for arm in c["arms"].values():
            if arm.get("n", 0) >= 2 and "ci95" in arm:
                assert ci95(arm["values"]) == pytest.approx(tuple(arm["ci95"]), rel=1e-9, abs=1e-12)
                checked += 1
    assert checked > 0


def contrasts_of(claims):
    """(claim, contrast) for every contrast judged: each claim's own and, for a ladder claim, those of
    its lower rungs (with that rung's arms in place of the claim's; the top rung is the claim's own)."""
    out = []
    for c in claims:
        out += [(c, k) for k in c.get("contrasts", [c["contrast"]] if c.get("contrast") else [])]
        for rung in (c.get("ladder") or [])[:-1]:
            out += [({**c, "arms": rung["arms"]}, k) for k in rung["contrasts"]]
    return out


def test_paired_verdicts_recompute():
    """Intervals, p-values and the decision against the margin (each one-sided test at alpha: a
    bound of the (1 - 2 alpha) interval), recomputed from the per-seed values claims.json carries. A claim of
    no effect (direction 'equal') is reproduced inside the margin (two one-sided tests) and
    contradicted beyond it."""
    claims = load()
    paired = [(c, k) for c, k in contrasts_of(claims) if c["kind"] == "paired" and k["diff_mean"] is not None]
    assert paired and any(k["direction"] == "equal" for _, k in paired)
    for c, contrast in paired:
        arm_a, arm_b = c["arms"][contrast["a"]], c["arms"][contrast["b"]]
        by_seed_a = dict(zip(arm_a["seeds"], arm_a["values"]))
        by_seed_b = dict(zip(arm_b["seeds"], arm_b["values"]))
        a = np.asarray([by_seed_a[s] for s in contrast["seeds"]])
        b = np.asarray([by_seed_b[s] for s in contrast["seeds"]])
        d = b - a if contrast["direction"] == "less" else a - b
        lo, hi = deciding_interval(d, c)
        assert (lo, hi) == pytest.approx(tuple(contrast["diff_ci95"]))
        assert contrast["p"] == pytest.approx(stats.ttest_1samp(d, 0).pvalue)
        m = contrast["margin"]
        above = stats.ttest_1samp(d, m, alternative="greater").pvalue
        inside = max(stats.ttest_1samp(d, -m, alternative="greater").pvalue,
                     stats.ttest_1samp(d, m, alternative="less").pvalue)
        equal = contrast["direction"] == "equal"
        assert contrast["p_reproduced"] == pytest.approx(inside if equal else above)
        if contrast["verdict"] == "not testable here":
            assert contrast.get("reason"), c["id"]
            continue
        if equal:       # inside the margin, reproduced only where a positive control saw an effect of its size
            seen = (c.get("positive_control") or {}).get("verdict") == "reproduced"
            expected = ("reproduced" if -m < lo and hi < m and seen else "contradicted" if lo > m or hi < -m
                        else "inconclusive")
        elif lo > m:
            expected = "reproduced"
        elif hi < -m:
            expected = "contradicted"
        elif -m < lo and hi < m:
            expected = "no meaningful effect"
        else:
            expected = "inconclusive"
        assert contrast["verdict"] == expected, c["id"]


def test_no_contrast_rests_on_a_reference_arm_that_did_not_train():
    """A reference arm's gate (share of its control's error removed, lower bound of its interval above the
    registered share) is shown, and no contrast with an untrained reference arm is decided."""
    import yaml
    share = RULES["control_error_removed"]
    shown = 0
    for c, contrast in contrasts_of(load()):
        for name in (contrast["a"], contrast["b"]):
            arm = c["arms"].get(name, {})
            for gate in (arm.get("control") or {}).values():
                shown += 1
                assert gate["trained"] == (gate["error_removed"]["ci95"][0] > share)
                if arm.get("reference") and not gate["trained"]:
                    assert contrast["verdict"] not in ("reproduced", "contradicted"), c["id"]
    assert shown > 0


def test_readme_figures_come_from_the_committed_files():
    import os
    import subprocess
    import sys
    root = CLAIMS.parents[1]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    result = subprocess.run([sys.executable, "-m", "replication", "readme", "--check"], cwd=root, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_every_committed_run_records_time_and_stays_under_4_gb():
    """Every study that has committed results has a training record for each of its conditions and
    seeds (resolved/conditions.json), each with its wall time and peak memory; no run (nor a worker
    process holding several) went above 4 GB."""
    root = CLAIMS.parents[1]
    resolved = json.loads((root / "resolved" / "conditions.json").read_text())
    studies = sorted(p.name for p in (root / "results" / "pretrain").iterdir() if p.is_dir())
    assert studies
    if registered_run_in_progress(root):        # studies not yet retrained hold the previous run's records
        studies = [s for s in studies if s not in stale_studies(root)]
    for study in studies:        # a condition's runs: its study's folder, and a stage-2 folder where it has one
        expected = {f"{name}/seed_{seed}.json" for name, c in resolved["conditions"].items()
                    for folder, seeds in (c.get("runs") or {c["study"]: resolved["seeds"]}).items()
                    if folder == study for seed in seeds}
        found = {str(p.relative_to(root / "results" / "pretrain" / study))
                 for p in (root / "results" / "pretrain" / study).glob("*/seed_*.json")}
        assert found == expected, study
    runs = [json.loads(p.read_text()) for p in root.glob("results/pretrain/*/*/seed_*.json")]
    assert all(r["wall_s"] > 0 and r["peak_rss_mb"] > 0 for r in runs)
    assert max(r["peak_rss_mb"] for r in runs) < 4096


def stale_studies(root):
    """Studies whose committed training records were not made with the current configuration: the
    md5 of resolved/pretrain/<study>.json in dvc.lock differs from the file's (or no lock entry; a
    stage-2 study <study>_stage2 is trained by pretrain_stage2@)."""
    lock = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    stale = set()
    for path in (root / "resolved" / "pretrain").glob("*.json"):
        study = path.stem
        deps = (lock.get(f"pretrain@{study}") or lock.get(f"pretrain_stage2@{study}") or {}).get("deps", [])
        recorded = next((d["md5"] for d in deps if d["path"] == f"resolved/pretrain/{study}.json"), None)
        if recorded != hashlib.md5(path.read_bytes()).hexdigest():
            stale.add(study)
    return stale


def test_committed_determinism_check_found_the_repeat_identical():
    det = json.loads((CLAIMS.parents[1] / "results" / "determinism.json").read_text())
    assert det["repeat_differences"] == []
