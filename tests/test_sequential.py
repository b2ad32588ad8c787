"""The two-stage sequential design of the seeds (judge/sequential.py): its operating characteristics
by simulation on constructed data, and its selection after stage 1."""
import math

import pytest

from replication.judge import sequential, verdicts
from replication.judge.measure import conditions_of

DESIGN = {"stage_one_seeds": 5, "further_seeds": 10, "seeds_needed_at_most": 15, "spending": "pocock",
          "conditions_at_most": 12, "first": []}
ALPHA = 0.025
REPLICATES = 20_000
MC_SE = math.sqrt(ALPHA * (1 - ALPHA) / REPLICATES)       # Monte Carlo error of a share near alpha


@pytest.mark.parametrize("direction", ["greater", "equal"])
def test_the_type_i_error_at_the_margin_stays_within_alpha(direction):
    """True effect exactly +m (in SD units of the per-seed difference): the design says reproduced
    in at most 2.5% of the replicates, the claim of no effect too (at its edge +m)."""
    found = sequential.simulate(0.5, 0.5, direction, DESIGN, ALPHA, REPLICATES)
    assert found[verdicts.REPRODUCED] <= ALPHA
    assert 0 < found["continued"] < 1                    # the rule selects some, not all


def test_the_boundaries_spend_alpha_when_every_undecided_contrast_continues():
    """Without the selection (every inconclusive contrast gets the further seeds), the two looks
    spend alpha, up to the simulation's own error; the spending is not all at the first look."""
    found = sequential.simulate(0.5, 0.5, "greater", DESIGN, ALPHA, REPLICATES, seed=1, every=True)
    assert ALPHA - 3 * MC_SE <= found[verdicts.REPRODUCED] <= ALPHA + 3 * MC_SE
    c1, c2 = sequential.boundaries(DESIGN, ALPHA)
    assert c1 > verdicts.stats.t.isf(ALPHA, 4) and c2 > verdicts.stats.t.isf(ALPHA, 14)


def test_power_at_an_effect_of_one_and_a_half_sd_beyond_the_margin():
    """Effect m + 1.5 SD: reproduced in at least 75% of the replicates (with 5 seeds at one look,
    about 40%), and never contradicted."""
    found = sequential.simulate(2.0, 0.5, "greater", DESIGN, ALPHA, REPLICATES)
    assert found[verdicts.REPRODUCED] >= 0.75
    assert found[verdicts.CONTRADICTED] == 0


def test_obrien_fleming_spends_almost_nothing_at_the_first_look():
    late = {**DESIGN, "spending": "obrien-fleming"}
    assert sequential.spent(late, ALPHA) < 0.001 < sequential.spent(DESIGN, ALPHA) < ALPHA
    assert sequential.simulate(0.5, 0.5, "greater", late, ALPHA, REPLICATES)[verdicts.REPRODUCED] <= ALPHA


def test_a_decision_at_stage_one_is_never_revisited():
    """Stage 1 far below -m (contradicted at c1); ten further seeds far above +m leave it so. An
    undecided stage 1 is decided by both looks' seeds at c2."""
    contradicted = [-3.0, -3.1, -2.9, -3.05, -2.95] + [5.0] * 10
    assert sequential.decide(contradicted, 0.5, "greater", DESIGN, ALPHA) == verdicts.CONTRADICTED
    undecided = [0.4, 1.6, 0.9, 2.2, 1.1] + [1.5, 1.2, 1.8, 1.4, 1.6, 1.3, 1.7, 1.5, 1.4, 1.6]
    assert sequential.decide(undecided[:5], 0.5, "greater", DESIGN, ALPHA) == verdicts.INCONCLUSIVE
    assert sequential.decide(undecided, 0.5, "greater", DESIGN, ALPHA) == verdicts.REPRODUCED


@pytest.mark.parametrize("diffs", [[0.1, 0.9, 0.5, 0.7, 0.3], [1.0, 1.2, 0.8, 1.1, 0.9], [0.5, 0.52, 0.48, 0.5, 0.51],
                                   [-2.0, 1.0, 3.0, -1.0, 0.5], [0.0, 0.0, 0.0, 0.0, 0.0]])
def test_the_selection_reads_the_seeds_needed_estimate(diffs):
    needed = verdicts.seeds_needed(diffs, 0.5, {"alpha": ALPHA, "max_seeds": 50})
    assert bool(sequential.settles_within(diffs, 0.5, ALPHA, 15)) == (needed is not None and needed <= 15)


def test_the_rule_selects_undecided_contrasts_that_fifteen_seeds_would_settle():
    claims = {"x": {"arms": {"a": {"condition": "c_a", "key": "eval.h.linear"},
                             "b": {"best_of": [{"condition": "c_b1", "key": "eval.h.linear"},
                                               {"condition": "c_b2", "key": "eval.h.linear"}]},
                             "c": {"condition": "c_c", "key": "eval.h.linear"}}}}
    judged = [{"id": "x", "contrasts": [
        {"a": "a", "b": "b", "verdict": "inconclusive", "seeds_needed": 12},
        {"a": "a", "b": "c", "verdict": "inconclusive", "seeds_needed": 40}]},
        {"id": "y", "contrast": {"a": "a", "b": "b", "verdict": "reproduced"}}]
    chosen = sequential.select(judged, claims, DESIGN, conditions_of)
    assert chosen == [{"id": "x", "a": "a", "b": "b", "seeds_needed": 12, "conditions": ["c_a", "c_b1", "c_b2"],
                       "capped": False, "seeds": list(range(5, 15))}]


def test_the_cap_takes_the_first_claims_then_the_fewest_seeds_needed():
    """Three conditions at most: the claim named first goes first whatever its seeds needed, then the
    fewest; a contrast whose new conditions would pass the cap gets none, one within it still does."""
    arm = lambda name: {"condition": name, "key": "eval.h.linear"}
    claims = {cid: {"arms": {"a": arm(f"{cid}_a"), "b": arm("shared")}} for cid in ("p", "q", "r", "s")}
    judged = [{"id": cid, "contrast": {"a": "a", "b": "b", "verdict": "inconclusive", "seeds_needed": n}}
              for cid, n in (("p", 6), ("q", 14), ("r", 7), ("s", 9))]
    chosen = sequential.select(judged, claims, {**DESIGN, "conditions_at_most": 3, "first": ["q"]}, conditions_of)
    assert [(c["id"], c["capped"]) for c in chosen] == [("q", False), ("p", False), ("r", True), ("s", True)]
    assert [c["seeds"] for c in chosen] == [list(range(5, 15))] * 2 + [[]] * 2


# ---------------------------------------------------------------- wired into the judging of a contrast

def judged_contrast(diffs, rules):
    """kinds._contrast of arms a and b whose per-seed differences are `diffs` (b at 0.5)."""
    from replication.judge import kinds
    arm = {"files": "results/evaluate/study/simclr/seed_*.json", "key": "eval.h.linear"}   # a condition of the run
    claim = {"margin": 0.02, "direction": "greater", "arms": {"a": arm, "b": arm}, "b": "b",
             "published_effect_value": None}
    by_seed = {"a": {s: 0.5 + d for s, d in enumerate(diffs)}, "b": {s: 0.5 for s in range(len(diffs))}}
    return kinds._contrast(claim, "a", "b", by_seed, {}, rules)


def t_of(diffs, margin=0.02):
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    return (mean - margin) / (sd / math.sqrt(n))


STAGE_ONE = [0.020, 0.030, 0.038, 0.046, 0.056]       # t = 2.89 on 4 df: beyond t_0.975 (2.78), not beyond c1 (3.61)


def test_stage_one_decides_at_c1_under_a_registered_design_and_at_t_without_one():
    from scipy import stats
    c1, _ = sequential.boundaries(DESIGN, ALPHA)
    assert stats.t.isf(ALPHA, 4) < t_of(STAGE_ONE) < c1
    plain = judged_contrast(STAGE_ONE, {"alpha": ALPHA, "max_seeds": 50})
    designed = judged_contrast(STAGE_ONE, {"alpha": ALPHA, "max_seeds": 50, "sequential": DESIGN})
    assert plain["verdict"] == verdicts.REPRODUCED and designed["verdict"] == verdicts.INCONCLUSIVE
    # the interval shown is the one that decided: wider under the design, its lower bound at or below the margin
    assert designed["diff_ci95"][0] <= 0.02 < plain["diff_ci95"][0]
    # and each records the level it was decided at, for every page that shows it
    assert plain["level"] == pytest.approx(0.95)
    assert designed["level"] == pytest.approx(1 - 2 * 0.025 * math.log(1 + (math.e - 1) * 5 / 15))


def test_stage_two_decides_at_c2_and_never_revisits_a_stage_one_decision():
    from scipy import stats
    _, c2 = sequential.boundaries(DESIGN, ALPHA)
    rules = {"alpha": ALPHA, "max_seeds": 50, "sequential": DESIGN}
    more = STAGE_ONE + [0.024, 0.028, 0.032, 0.036, 0.040, 0.044, 0.026, 0.030, 0.034, 0.038]
    assert t_of(more) > c2
    assert judged_contrast(more, rules)["verdict"] == verdicts.REPRODUCED
    decided = [0.050, 0.052, 0.054, 0.056, 0.058]            # t far beyond c1 at stage 1
    against = decided + [-0.2] * 10                           # stage 2's seeds would say otherwise
    assert judged_contrast(decided, rules)["verdict"] == verdicts.REPRODUCED
    kept = judged_contrast(against, rules)
    assert kept["verdict"] == verdicts.REPRODUCED and len(kept["seeds"]) == 5
    assert judged_contrast(more, rules)["level"] == pytest.approx(1 - 2 * stats.t.sf(c2, 14))
    assert sequential.look({"alpha": ALPHA}, 5) == {"alpha": ALPHA}
    assert sequential.look(rules, 15)["alpha"] == pytest.approx(stats.t.sf(c2, 14))


def test_a_paired_interval_is_named_at_the_level_of_the_look_that_decided_it():
    """Under the design, stage 1's interval is 1 - 2 alpha(t1) with Pocock's alpha(t1) = alpha ln(1 + (e - 1) t1),
    stage 2's 1 - 2 P(t_14 > c2); without a design, the registry's 1 - 2 alpha."""
    rules = {"alpha": 0.025, "sequential": DESIGN}
    first = 1 - 2 * 0.025 * math.log(1 + (math.e - 1) * 5 / 15)
    second = verdicts.level(sequential.look(rules, 15))
    assert verdicts.level(sequential.look(rules, 5)) == pytest.approx(first)
    assert sequential.level_text(rules) == f"{100 * first:.3g}% at 5 seeds, {100 * second:.3g}% at 15" \
        == "97.7% at 5 seeds, 96.9% at 15"
    assert sequential.level_text({"alpha": 0.025}) == "95%"
    assert sequential.one_sided_text({"alpha": 0.025}) == "2.5%"
    assert "(97.7% at 5 seeds, 96.9% at 15)" in verdicts.verdict_rules(*sequential.level_texts(rules))[0][1]


def test_every_look_the_design_makes_has_its_own_boundary_and_no_other_count_of_seeds_is_decided():
    """A best-of contrast reads the held-out half of each stage's seeds (3 of 5, then 8 of 15): the
    first look spends stage 1's alpha(t1) on its own 2 df; the two held-out halves share no seed, so
    their t-statistics are independent and the second spends the rest, (alpha - alpha(t1)) / (1 -
    alpha(t1)), on 7 df. A count of seeds no look makes has no boundary: it stops with one line."""
    from scipy import stats
    rules = {"alpha": ALPHA, "max_seeds": 50, "sequential": DESIGN}
    first = sequential.spent(DESIGN, ALPHA)
    assert sequential.looks(DESIGN) == {5: (1, False), 15: (2, False), 3: (1, True), 8: (2, True)}
    assert sequential.look(rules, 3)["alpha"] == pytest.approx(first)
    c1, c2 = sequential.boundaries(DESIGN, ALPHA, held_out=True)
    assert c1 == pytest.approx(stats.t.isf(first, 2))
    assert sequential.look(rules, 8)["alpha"] == pytest.approx(stats.t.sf(c2, 7))
    assert stats.t.sf(c2, 7) == pytest.approx((ALPHA - first) / (1 - first), rel=0.05)
    assert sequential.boundaries(DESIGN, ALPHA, held_out=True)[1] != sequential.boundaries(DESIGN, ALPHA)[1]
    for n in (2, 4, 10):
        with pytest.raises(sequential.LookError, match=f"over {n} seeds, a look rules.sequential does not make"):
            sequential.look(rules, n)
    assert sequential.look({"alpha": ALPHA}, 4) == {"alpha": ALPHA}      # no design: one look at alpha
