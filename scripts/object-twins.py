#!/usr/bin/env python3
"""Object-metric twins of the behaviour cases that use an External metric only as a vehicle.

Many HPA implementations read no `external.metrics.k8s.io`; the harness skips every case with an
External metric for an implementation whose `hello.features` lack `externalMetrics`
(harness/src/case/features.rs). About fifty behaviour cases translated from upstream's
horizontal_test.go (rate limits, stabilization, stored scale events, …) use an External metric
with an AverageValue target of 1 only to produce a chosen raw recommendation. For each of them this
script writes `<same folder>/<name>-object.yaml`: the same scenario with an Object metric
(describedObject Deployment some-deployment, as the HT translations of upstream's Object tests
use) with the same AverageValue target, and each External `series: ['v']` load written as the
Object `value: 'v'`. Upstream computes both the same way: External AverageValue proposes
ceil(sum of the series / target) with the ratio sum / (target × status.replicas), Object
AverageValue ceil(value / target) with the ratio value / (target × status.replicas), so the
replica outcome is the same.

A case is twinned when all of these hold (otherwise it is listed with the reason):
- it is a vehicle case: its notes carry the corpus's vehicle sentence (`VEHICLE_NOTE`), i.e. the
  External metric only produces the prenormalized desired count; cases whose subject is the
  External metric itself (per-pod External facts, External docs statements, fetch errors,
  quantity fidelity) are not;
- every External metric (in `hpa`, every `hpaPatch`, every HPA `alongside`) has an AverageValue
  target and no selector (absent or `{}`), and its name is used by no other metric of the case;
- every load of such a metric is one plain series item (no `asWritten`, no other field), and no
  `metricError` or `metricsMissing` names it;
- the expectations (`expect`, `changedIn`) do not mention External (no FailedGetExternalMetric,
  no External messages or currentMetrics).

The files are generated from the original's text, so comments and layout stay: `name` gains
`-object`, `title` says it is the Object-metric twin, `notes` starts with the twin paragraph and
words the vehicle sentence for the Object metric, each External metric block becomes the Object
block and each series load a value; everything else (source, settings, gates, memory, timeline,
expect, changedIn, kubernetesVersions) is copied. Each output is re-parsed and checked against the
same transformation done on the parsed original; a difference is an error.

Re-run from the repository root (PyYAML needed):

    python3 scripts/object-twins.py            # write the twins, print the twinned and skipped
    python3 scripts/object-twins.py --check    # write nothing; exit 1 if a twin is missing or stale

Then run the twins on the core and on upstream's controller (`hpa-conformance run …-object.yaml`,
with `--target exec:adapters/upstream/bin/<release>/hpa-upstream-adapter --kubernetes-version …`),
and review their new trace snapshots (`just snapshots`).
"""

import copy
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "cases"

DESCRIBED = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "some-deployment"}
DESCRIBED_FLOW = "{apiVersion: apps/v1, kind: Deployment, name: some-deployment}"

VEHICLE_NOTE = (
    "The prenormalized desired count comes from an External metric qps with an AverageValue "
    "target of 1: the proposal is ceil(sum/1) = the series value (ratio = value/current is outside "
    "the 0.1 tolerance)."
)
OBJECT_NOTE = (
    "The prenormalized desired count comes from an Object metric qps (describedObject Deployment "
    "some-deployment) with an AverageValue target of 1: the proposal is ceil(value/1) = the "
    "object's value (ratio = value/(1 x status replicas) is outside the 0.1 tolerance)."
)
# Other wordings of the original notes that name the External metric as the vehicle.
NOTE_REPLACEMENTS = [
    (VEHICLE_NOTE, OBJECT_NOTE),
    ("(the External driver metric qualifies)", "(the Object driver metric qualifies)"),
]
TWIN_SUFFIX = "-object"


def twin_paragraph(original):
    return (
        f"Object-metric twin of {original}: the External metric there is only a vehicle for the raw "
        "recommendation; here an Object metric with the same AverageValue target and value gives the "
        "same one (upstream: External AverageValue ceil(sum/target), Object AverageValue "
        "ceil(value/target), the same tolerance ratio). An implementation without External metrics "
        "gets the same behaviour coverage from this case. Written by scripts/object-twins.py."
    )


def hpas(case):
    """Every HPA manifest (or patch) of a case, with where it is."""
    out = [("hpa", case.get("hpa") or {})]
    for i, step in enumerate(case.get("timeline") or []):
        if "hpaPatch" in step:
            out.append((f"timeline[{i}].hpaPatch", step["hpaPatch"] or {}))
    for k, a in enumerate(case.get("alongside") or []):
        out.append((f"alongside[{k}].hpa", a.get("hpa") or {}))
        for i, step in enumerate(a.get("timeline") or []):
            if "hpaPatch" in step:
                out.append((f"alongside[{k}].timeline[{i}].hpaPatch", step["hpaPatch"] or {}))
    return out


def metrics_of(h):
    return ((h.get("spec") or {}).get("metrics")) or []


def metric_name(m):
    body = m.get(m.get("type", "")[:1].lower() + m.get("type", "")[1:]) or {}
    if m.get("type") in ("Resource", "ContainerResource"):
        return body.get("name")
    return (body.get("metric") or {}).get("name")


def timelines(case):
    yield from case.get("timeline") or []
    for a in case.get("alongside") or []:
        yield from a.get("timeline") or []


def loads_of(step):
    out = []
    if "load" in step:
        out.append(step["load"])
    out.extend(step.get("loads") or [])
    return out


def named(entry):
    """The metric names a metricError / metricsMissing entry (or list) names."""
    items = entry if isinstance(entry, list) else [entry]
    return {i.get("metric") for i in items if isinstance(i, dict)}


def mentions_external(x):
    text = yaml.safe_dump(x, default_flow_style=True, width=1 << 30)
    return re.search(r"external", text, re.IGNORECASE) is not None


def reasons_not_to_twin(case):
    """Why a case with an External metric gets no twin (empty: it qualifies)."""
    reasons = []
    externals = []
    for where, h in hpas(case):
        for j, m in enumerate(metrics_of(h)):
            if m.get("type") == "External":
                externals.append((f"{where}.spec.metrics[{j}]", m))
    if not externals:
        return ["no External metric"]
    if VEHICLE_NOTE not in (case.get("notes") or ""):
        reasons.append(
            "not a vehicle case: the External metric is what the case is about "
            "(its notes lack the vehicle sentence)"
        )
    names = set()
    for where, m in externals:
        e = m.get("external") or {}
        target = e.get("target") or {}
        if target.get("type") != "AverageValue":
            reasons.append(f"{where}: a {target.get('type')} target, not AverageValue")
        sel = (e.get("metric") or {}).get("selector")
        if sel not in (None, {}):
            reasons.append(f"{where}: a selector {sel}")
        names.add((e.get("metric") or {}).get("name"))
    for where, h in hpas(case):
        for j, m in enumerate(metrics_of(h)):
            if m.get("type") != "External" and metric_name(m) in names:
                reasons.append(f"{where}.spec.metrics[{j}]: another metric named like the External one")
    for step in timelines(case):
        for ld in loads_of(step):
            if ld.get("metric") not in names:
                continue
            series = ld.get("series")
            if set(ld) != {"metric", "series"} or not isinstance(series, list) or len(series) != 1:
                reasons.append(f"t={step.get('at')}: an External load that is not one plain series item: {ld}")
        for key in ("metricError", "metricsMissing"):
            if key in step and named(step[key]) & names:
                reasons.append(f"t={step.get('at')}: a {key} on the External metric")
    for key in ("expect", "changedIn"):
        if key in case and mentions_external(case[key]):
            reasons.append(f"{key} mentions External (an External-specific expectation)")
    return reasons


def to_object_metric(m):
    e = m["external"]
    return {
        "type": "Object",
        "object": {
            "describedObject": dict(DESCRIBED),
            "metric": {"name": e["metric"]["name"]},
            "target": e["target"],
        },
    }


def twin_notes(case):
    notes = case.get("notes") or ""
    for old, new in NOTE_REPLACEMENTS:
        notes = notes.replace(old, new)
    # "an Object/External metric" states a rule about both and stays.
    if re.search(r"external", notes.replace("Object/External", ""), re.IGNORECASE):
        raise SystemExit(f"{case['name']}: its notes still name External after the rewording: add a replacement")
    return twin_paragraph(case["name"]) + "\n" + notes


def twin_title(case):
    return f"{case['title']} [Object-metric twin of {case['name']}]"


def expected_twin(case):
    """The twin as data: what the generated text must parse to."""
    t = copy.deepcopy(case)
    t["name"] = case["name"] + TWIN_SUFFIX
    t["title"] = twin_title(case)
    t["notes"] = twin_notes(case)
    names = set()
    for _, h in hpas(t):
        ms = metrics_of(h)
        for j, m in enumerate(ms):
            if m.get("type") == "External":
                names.add(m["external"]["metric"]["name"])
                ms[j] = to_object_metric(m)
    for step in timelines(t):
        for ld in loads_of(step):
            if ld.get("metric") in names:
                ld["value"] = ld.pop("series")[0]
    return t


def top_level_block(text, key):
    """The span of a top-level key's lines (the key line and its indented continuation)."""
    m = re.search(rf"^{key}:.*\n(?:(?:[ \t].*)?\n)*?(?=^\S)", text, re.MULTILINE)
    if not m:
        raise SystemExit(f"no top-level {key}: block")
    return m.span()


def replace_block(text, key, new_block):
    a, b = top_level_block(text, key)
    return text[:a] + new_block + text[b:]


def dump_scalar(key, value):
    return yaml.safe_dump({key: value}, width=1 << 30, allow_unicode=True, default_flow_style=False)


def literal_block(key, value):
    lines = value.rstrip("\n").split("\n")
    body = "".join(("  " + l if l else "") + "\n" for l in lines)
    return f"{key}: |\n{body}"


EXTERNAL_BLOCK = re.compile(
    r"^(?P<ind>[ ]*)- type: External\n"
    r"(?P=ind)  external:\n"
    r"(?P=ind)    metric:\n"
    r"(?P=ind)      name: (?P<name>\S+)\n"
    r"(?:(?P=ind)      selector: \{\}\n)?"
    r"(?P=ind)    target: (?P<target>.*)\n",
    re.MULTILINE,
)
SERIES_LINE = re.compile(r"^(?P<ind>[ ]+)series: \[(?P<v>[^,\]]+)\]$", re.MULTILINE)


def twin_text(text, case):
    out = text
    out = replace_block(out, "name", dump_scalar("name", case["name"] + TWIN_SUFFIX))
    out = replace_block(out, "title", dump_scalar("title", twin_title(case)))
    out = replace_block(out, "notes", literal_block("notes", twin_notes(case)))
    out = EXTERNAL_BLOCK.sub(
        lambda m: (
            f"{m['ind']}- type: Object\n"
            f"{m['ind']}  object:\n"
            f"{m['ind']}    describedObject: {DESCRIBED_FLOW}\n"
            f"{m['ind']}    metric: {{name: {m['name']}}}\n"
            f"{m['ind']}    target: {m['target']}\n"
        ),
        out,
    )
    out = SERIES_LINE.sub(lambda m: f"{m['ind']}value: {m['v']}", out)
    return out


def main(argv):
    check = "--check" in argv[1:]
    twins, skipped, stale = [], [], []
    for path in sorted(CASES.rglob("*.yaml")):
        if path.stem.endswith(TWIN_SUFFIX) and path.with_name(path.stem[: -len(TWIN_SUFFIX)] + ".yaml").exists():
            continue
        text = path.read_text()
        case = yaml.safe_load(text)
        if not isinstance(case, dict) or not any(
            m.get("type") == "External" for _, h in hpas(case) for m in metrics_of(h)
        ):
            continue
        rel = path.relative_to(CASES)
        reasons = reasons_not_to_twin(case)
        if reasons:
            skipped.append((rel, reasons))
            continue
        out_text = twin_text(text, case)
        got = yaml.safe_load(out_text)
        want = expected_twin(case)
        if got != want:
            diff = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
            raise SystemExit(f"{rel}: the generated twin does not parse to the expected twin (keys {diff})")
        out = path.with_name(path.stem + TWIN_SUFFIX + ".yaml")
        if check:
            if not out.exists() or out.read_text() != out_text:
                stale.append(out.relative_to(CASES))
        else:
            out.write_text(out_text)
        twins.append(out.relative_to(CASES))
    print(f"{len(twins)} Object-metric twins{' checked' if check else ' written'}:")
    for t in twins:
        print(f"  {t}")
    print(f"{len(skipped)} cases with an External metric not twinned:")
    for rel, reasons in skipped:
        print(f"  {rel}: " + "; ".join(reasons))
    if stale:
        print(f"{len(stale)} twins missing or stale: run scripts/object-twins.py", file=sys.stderr)
        for s in stale:
            print(f"  {s}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
