#!/usr/bin/env python3
"""A small HPA in Python, written from hpa-conformance's step protocol alone (harness/PROTOCOL.md).

The second worked example beside k8shorizmetrics: no Go, no kit, no client library; only the
protocol's JSON lines on stdin/stdout and the standard library. It shows that the protocol is the
contract: whatever speaks it can be judged by the corpus.

What it implements, on purpose a subset of the HPA (its known differences from upstream are
reviewed in expectations.yaml beside it):
- Resource metrics (Utilization and AverageValue), Pods and Object metrics; the largest proposal
  of the metrics wins; a metric that cannot be read is left out.
- Pod selection by the scale's label selector (equality and set expressions); pods being deleted
  or failed are ignored; pods without a sample are left out of the ratio (no missing-pod
  dampening, no unready-pod handling, no CPU initialization period).
- The tolerance band, 1 - tolerance <= ratio <= 1 + tolerance: no change.
- No `behavior`: the scale-up limit max(factor x current, minimum) per sync, the downscale
  stabilization window (the highest recommendation within it, the first sight of the HPA counting
  as a recommendation of the current count), then minReplicas/maxReplicas.
- Scaling is off at zero replicas.
Quantities are parsed exactly, as integer milli-units (rounded up, as Kubernetes' MilliValue).

Run:  hpa-conformance run cases/algorithm cases/docs --target "exec:python3 adapters/python-minimal/hpa.py"
"""

import json
import math
import re
import sys
from datetime import datetime, timedelta
from decimal import Decimal, ROUND_CEILING

SUFFIXES = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}


EXPONENT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")


def milli(quantity):
    """A Kubernetes quantity ("500m", "1.5Gi", "2e3") as integer milli-units, rounded up."""
    text = str(quantity).strip()
    number, suffix = text, ""
    if not EXPONENT.match(text):
        for s in sorted(SUFFIXES, key=len, reverse=True):
            if s and text.endswith(s):
                number, suffix = text[: -len(s)], s
                break
    value = Decimal(number) * SUFFIXES[suffix] * 1000
    return int(value.to_integral_value(rounding=ROUND_CEILING))


def parse_time(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def selects(selector, labels):
    """Whether a label selector string (as scale.status.selector) selects these labels."""
    if not selector:
        return True
    parts, depth, current = [], 0, ""
    for ch in selector:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    for part in (p.strip() for p in parts if p.strip()):
        words = part.split()
        if " notin " in f" {part} " or " in " in f" {part} ":
            key, op = words[0], words[1]
            values = {v.strip() for v in part[part.index("(") + 1 : part.rindex(")")].split(",")}
            has = key in labels and labels[key] in values
            if (op == "in") != has:
                return False
        elif "!=" in part:
            key, value = (x.strip() for x in part.split("!=", 1))
            if labels.get(key) == value:
                return False
        elif "=" in part:
            key, value = (x.strip() for x in part.replace("==", "=").split("=", 1))
            if labels.get(key) != value:
                return False
        elif part.startswith("!"):
            if part[1:].strip() in labels:
                return False
        elif part not in labels:
            return False
    return True


class Session:
    def __init__(self, start):
        self.settings = start.get("settings") or {}
        memory = start.get("memory")
        # None: the controller never saw the HPA (its first sight records the current count).
        self.first_sight = memory is None
        self.recommendations = []  # (time, replicas)

    def pods(self, tick):
        scale = tick["scale"]
        selector = (scale.get("status") or {}).get("selector", "")
        out = []
        for pod in tick.get("pods") or []:
            meta = pod.get("metadata") or {}
            status = pod.get("status") or {}
            if meta.get("deletionTimestamp") or status.get("phase") in ("Failed", "Succeeded"):
                continue
            if selects(selector, meta.get("labels") or {}):
                out.append(pod)
        return out

    def request(self, pod, resource, container=None):
        pod_level = ((pod.get("spec") or {}).get("resources") or {}).get("requests") or {}
        if container is None and resource in pod_level:
            return milli(pod_level[resource])
        total = 0
        for c in (pod.get("spec") or {}).get("containers") or []:
            if container is not None and c.get("name") != container:
                continue
            req = ((c.get("resources") or {}).get("requests") or {}).get(resource)
            if req is None:
                return None
            total += milli(req)
        return total

    def within_tolerance(self, ratio):
        tol = float(self.settings.get("tolerance", 0.1))
        return 1.0 - tol <= ratio <= 1.0 + tol

    def proposal(self, metric, tick, pods, current):
        kind = metric.get("type")
        metrics = tick.get("metrics") or {}
        if kind == "Resource":
            source = metric["resource"]
            resource, target = source["name"], source["target"]
            answer = metrics.get("resource") or {}
            if answer.get("error") is not None:
                return None
            usage = {}
            for item in answer.get("items") or []:
                values = [c.get("usage", {}).get(resource) for c in item.get("containers") or []]
                if values and all(v is not None for v in values):
                    usage[item["metadata"]["name"]] = sum(milli(v) for v in values)
            sampled = [p for p in pods if p["metadata"]["name"] in usage]
            if not sampled:
                return None
            total = sum(usage[p["metadata"]["name"]] for p in sampled)
            if target.get("type") == "Utilization":
                requests = [self.request(p, resource) for p in sampled]
                if any(r is None for r in requests) or sum(requests) == 0:
                    return None
                utilization = total * 100 // sum(requests)
                ratio = utilization / target["averageUtilization"]
            else:
                ratio = (total / len(sampled)) / milli(target["averageValue"])
            if self.within_tolerance(ratio):
                return current
            return math.ceil(ratio * len(sampled))
        if kind == "Pods":
            source = metric["pods"]
            answer = (metrics.get("pods") or {}).get(source["metric"]["name"]) or {}
            if answer.get("error") is not None:
                return None
            names = {p["metadata"]["name"] for p in pods}
            values = [milli(i["value"]) for i in answer.get("items") or [] if i.get("pod") in names]
            if not values:
                return None
            ratio = (sum(values) / len(values)) / milli(source["target"]["averageValue"])
            if self.within_tolerance(ratio):
                return current
            return math.ceil(ratio * len(values))
        if kind == "Object":
            source = metric["object"]
            answer = (metrics.get("object") or {}).get(source["metric"]["name"]) or {}
            if answer.get("error") is not None or not answer.get("value"):
                return None
            value = milli(answer["value"]["value"])
            target = source["target"]
            if target.get("type") == "AverageValue":
                average = milli(target["averageValue"])
                if current and self.within_tolerance(value / (average * current)):
                    return current
                return math.ceil(value / average)
            ratio = value / milli(target["value"])
            if self.within_tolerance(ratio):
                return current
            return math.ceil(ratio * len(pods))
        return None  # External and ContainerResource: not implemented (not declared in hello)

    def tick(self, tick):
        result = {"kind": "result", "t": tick["t"], "scaledTo": None, "events": []}
        hpa = tick["hpa"]
        spec = hpa.get("spec") or {}
        status = dict(hpa.get("status") or {})
        result["status"] = status
        scale = tick.get("scale")
        if tick.get("scaleError") is not None or scale is None:
            return result
        current = (scale.get("spec") or {}).get("replicas", 0)
        status["currentReplicas"] = (scale.get("status") or {}).get("replicas", 0)
        low, high = spec.get("minReplicas", 1), spec["maxReplicas"]
        now = parse_time(tick["now"])
        if self.first_sight:
            self.recommendations.append((now, current))
            self.first_sight = False
        if current == 0 and low != 0:
            status["desiredReplicas"] = 0
            return result
        pods = self.pods(tick)
        proposals = [self.proposal(m, tick, pods, current) for m in spec.get("metrics") or []]
        proposals = [p for p in proposals if p is not None]
        if not proposals:
            status["desiredReplicas"] = current
            return result
        wanted = max(proposals)
        # The downscale stabilization: the highest recommendation within the window.
        window = timedelta(seconds=self.settings.get("downscaleStabilizationSeconds", 300))
        self.recommendations = [(t, r) for (t, r) in self.recommendations if t >= now - window]
        self.recommendations.append((now, wanted))
        desired = max(r for (_, r) in self.recommendations)
        # The scale-up limit, then min and max.
        factor = float(self.settings.get("scaleUpLimitFactor", 2.0))
        minimum = float(self.settings.get("scaleUpLimitMinimum", 4.0))
        desired = min(desired, int(max(factor * current, minimum)), high)
        desired = max(desired, low)
        status["desiredReplicas"] = desired
        if desired != current and tick.get("scaleUpdateError") is None:
            result["scaledTo"] = desired
        return result


def main():
    session = None
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        kind = message.get("kind")
        if kind == "start":
            session = Session(message)
            gates = dict(message.get("featureGates") or {})
            gates["HPAScaleToZero"] = False  # no scaling to or from zero
            answer = {
                "kind": "hello",
                "protocol": 1,
                "implementation": {"name": "python-minimal", "version": "0.1.0"},
                "featureGates": gates,
                "memorySeeding": False,
                "levels": ["replicas"],
                "features": [],
                "manyCases": True,
                "kubernetesVersion": "1.37",
            }
        elif kind == "tick":
            answer = session.tick(message)
        elif kind == "end":
            session = None
            answer = {"kind": "ended", "case": message.get("case")}
        elif kind == "stop":
            return 0
        else:
            print(f"python-minimal: unknown message kind {kind!r}", file=sys.stderr)
            return 2
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
