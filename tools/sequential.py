"""After stage 1 of a registered run: the contrasts the registered sequential rule (rules.sequential
in analysis/claims.yaml; judge/sequential.py) gives further seeds, the conditions that run them and
the boundaries stage 2 is decided at. Reads reports/claims.json and analysis/claims.yaml.

    python -m tools.sequential
"""
from replication.judge import sequential
from replication.judge.measure import conditions_of
from replication.judge.record import RecordError, as_dicts, read_claims
from replication.judge.registry import RegistryError, load_registry


def report(rules, claims, judged):
    """The lines to print: the design, its boundaries and each selected contrast."""
    design = rules["sequential"]
    c1, c2 = sequential.boundaries(design, rules["alpha"])
    n1, n2 = sequential.seeds(design)
    lines = [f"design: {design['spending']} spending of {rules['alpha']:g} one-sided over {n1} and {n2} seeds; "
             f"stage 1 decides at t > {c1:.3f} ({n1 - 1} df), stage 2 at t > {c2:.3f} ({n2 - 1} df)"]
    chosen = sequential.select(judged, {c["id"]: c for c in claims}, design, conditions_of)
    for c in chosen:
        if c["capped"]:
            lines.append(f"{c['id']}: {c['a']} vs {c['b']} (about {c['seeds_needed']} seeds): past the cap of "
                         f"{design['conditions_at_most']} conditions, no further seeds")
            continue
        lines.append(f"{c['id']}: {c['a']} vs {c['b']} (about {c['seeds_needed']} seeds would settle it): seeds "
                     f"{c['seeds'][0]}-{c['seeds'][-1]} of {', '.join(c['conditions'])}")
    chosen = [c for c in chosen if not c["capped"]]
    conditions = sorted({name for c in chosen for name in c["conditions"]})
    lines.append(f"{len(chosen)} contrasts selected; {len(conditions)} conditions x {design['further_seeds']} seeds")
    return lines


def main():
    try:
        registry = load_registry()
        judged = as_dicts(read_claims())
    except (RegistryError, RecordError) as e:
        raise SystemExit(f"error: {e}")
    if "sequential" not in registry.rules:
        raise SystemExit("error: analysis/claims.yaml: rules.sequential: no sequential rule is registered; add "
                         "stage_one_seeds, further_seeds, seeds_needed_at_most and spending before the first look")
    print("\n".join(report(registry.rules, registry.claims, judged)))


if __name__ == "__main__":
    main()
