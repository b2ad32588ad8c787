"""Compare two judged claim files: which verdicts changed, and how far each effect moved measured in
its own interval's half-width.

    python -m tools.compare                          # committed (git HEAD) against the working tree
    python -m tools.compare OLD NEW                  # files, or REV:path (e.g. HEAD~3:reports/claims.json)

A rerun on another CPU or thread count is a second realisation of the same study: effects move a
little, and a verdict near a threshold may flip. A shift larger than the old interval's half-width
is marked with '!'.
"""
import json
import subprocess
import sys
from pathlib import Path

DEFAULT_OLD, DEFAULT_NEW = "HEAD:reports/claims.json", "reports/claims.json"


def load(source):
    """Claims from a file, or from `REV:path` in git."""
    if Path(source).exists():
        return json.loads(Path(source).read_text())
    shown = subprocess.run(["git", "show", source], capture_output=True, text=True)
    if shown.returncode:
        raise SystemExit(f"error: {source}: neither a file nor a git REV:path")
    return json.loads(shown.stdout)


def effects(claim):
    """{label: (mean, half-width)} of a claim's contrasts, or of its arms when it has none."""
    out = {}
    for c in claim.get("contrasts") or ([claim["contrast"]] if claim.get("contrast") else []):
        if c.get("diff_mean") is not None:
            lo, hi = c["diff_ci95"]
            out[f"{c['a']} - {c['b']}"] = (c["diff_mean"], (hi - lo) / 2)
    if not out:
        for name, arm in (claim.get("arms") or {}).items():
            if "ci95" in arm and arm.get("n", 0) > 1:
                lo, hi = arm["ci95"]
                out[name] = (arm["mean"], (hi - lo) / 2)
    return out


def compare(old, new):
    """Lines describing verdict changes and effect shifts between two lists of judged claims."""
    old_by_id, new_by_id = {c["id"]: c for c in old}, {c["id"]: c for c in new}
    shared = [i for i in new_by_id if i in old_by_id]
    changed = [i for i in shared if old_by_id[i]["verdict"] != new_by_id[i]["verdict"]]
    lines = [f"verdicts: {len(changed)} of {len(shared)} shared claims changed"]
    lines += [f"  {i}: {old_by_id[i]['verdict']} -> {new_by_id[i]['verdict']}" for i in changed]
    only = sorted(set(old_by_id) ^ set(new_by_id))
    if only:
        lines.append(f"claims in one file only: {', '.join(only)}")
    shifts = []
    for i in shared:
        before, after = effects(old_by_id[i]), effects(new_by_id[i])
        for label in before.keys() & after.keys():
            (m0, half), (m1, _) = before[label], after[label]
            if m1 != m0:
                units = abs(m1 - m0) / half if half else float("inf")
                shifts.append((units, f"  {'!' if units > 1 else ' '} {i} [{label}]: {m0:.4g} -> {m1:.4g} "
                                      f"(shift {m1 - m0:+.3g}, {units:.2f} of the old half-width)"))
    lines.append(f"effects: {len(shifts)} moved; {sum(u > 1 for u, _ in shifts)} by more than the old "
                 "95% half-width (marked !)")
    lines += [text for _, text in sorted(shifts, key=lambda s: -s[0])]
    return lines


def main(argv):
    old, new = (argv + [DEFAULT_OLD, DEFAULT_NEW][len(argv):])[:2]
    print("\n".join(compare(load(old), load(new))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
