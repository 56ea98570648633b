"""Tables (median, IQR, ratio to graphjit and to the best peer), the JSON record and the bar chart."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from common import fmt_time

GJ = "graphjit"


def _by_case(results: list[dict]) -> dict[tuple[str, str], list[dict]]:
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in results:
        groups[(r["workload"], r["case"])].append(r)
    return groups


def _ratio(t: float | None, base: float | None) -> str:
    return f"{t / base:.2f}x" if t and base else "-"


def table(setting: str, results: list[dict]) -> str:
    """One text table per workload case: median, IQR, time / graphjit's, time / best peer's."""
    lines = []
    for (workload, case), rows in _by_case(results).items():
        ok = {r["impl"]: r["median"] for r in rows if r["status"] == "ok"}
        gj = ok.get(GJ)
        peers = {k: v for k, v in ok.items() if k != GJ}
        best = min(peers, key=peers.get) if peers else None
        loads = [x for r in rows for x in r["extra"].get("loadavg", [])]
        load = f"  load {min(loads):.1f}-{max(loads):.1f}" if loads else ""
        lines.append(f"\n{workload} {case}  [{setting}]  best peer: {best or '-'}{load}")
        lines.append(f"  {'impl':<16} {'median':>10} {'IQR':>10} {'/graphjit':>10} {'/best peer':>11}")
        for r in rows:
            if r["status"] == "n/a":
                lines.append(f"  {r['impl']:<16} {'n/a':>10}   ({r['reason']})")
                continue
            iqr = fmt_time(r["q3"] - r["q1"]) if r["q1"] is not None else "-"
            flag = "" if r["status"] == "ok" else f"   MISMATCH ({r['reason']})"
            lines.append(f"  {r['impl']:<16} {fmt_time(r['median']):>10} {iqr:>10} "
                         f"{_ratio(r['median'], gj):>10} {_ratio(r['median'], peers.get(best)):>11}{flag}")
    return "\n".join(lines)


def write_json(path: Path, record: dict[str, Any]) -> None:
    """Write the whole run (environment, settings, every result) as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=str))


def write_chart(path: Path, record: dict[str, Any]) -> None:
    """A grid of horizontal bar charts, one per case, log-scale time, one colour per thread setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    settings = list(record["settings"])
    cases: dict[tuple[str, str], dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for setting in settings:
        for r in record["settings"][setting]["results"]:
            cases[(r["workload"], r["case"])][r["impl"]][setting] = r["median"] if r["status"] != "n/a" else None
    ncols = 3
    nrows = max(1, -(-len(cases) // ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(6 * ncols, 3.2 * nrows), squeeze=False)
    height = 0.8 / max(1, len(settings))
    for ax, ((workload, case), impls) in zip(axes.flat, cases.items()):
        names = list(impls)
        for k, setting in enumerate(settings):
            ys = [i + k * height for i in range(len(names))]
            vals = [impls[n].get(setting) or 0.0 for n in names]
            ax.barh(ys, vals, height=height, label=setting, color=f"C{k}")
            for n, y, v in zip(names, ys, vals):
                if setting not in impls[n]:
                    continue  # not measured in this setting (W5 runs pinned only)
                label, x = ("n/a", 0.01) if not v else (fmt_time(v), v)
                ax.text(x, y, " " + label, va="center", fontsize=6,
                        transform=ax.get_yaxis_transform() if not v else ax.transData)
        ax.set_yticks([i + height * (len(settings) - 1) / 2 for i in range(len(names))], names, fontsize=8)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        found = [v for n in names for v in impls[n].values() if v]
        if found:  # start the axis well left of the fastest bar, so bar lengths compare honestly
            ax.set_xlim(min(found) / 4, max(found) * 2)
        ax.invert_yaxis()
        ax.set_title(f"{workload} {case}", fontsize=10)
        ax.set_xlabel("seconds per call (median, log)", fontsize=8)
    for ax in list(axes.flat)[len(cases):]:
        ax.axis("off")
    if cases:
        axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
