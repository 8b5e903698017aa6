"""The benchmark page: ``index.html`` beside the JSON report, a plot per workload, the machine and the versions.

Each plot is also written as a PNG file beside the page (the README embeds some); the page itself embeds them
(base64), so it can be mailed or opened from anywhere.  The tables are ``run.py``'s markdown, rendered.
"""

from __future__ import annotations

import base64
import html
import importlib.metadata
from collections.abc import Callable
from pathlib import Path
from typing import Any

OURS = "#d62728"
PEER = "#7f7f7f"
TRIO = "#ff9896"
PACKAGES = ("agentactors", "anyio", "trio", "httpx", "aiohttp", "h11", "pydantic-ai-slim", "openai-agents",
            "autogen-core", "langgraph", "openai", "matplotlib")


def versions() -> dict[str, str]:
    """The installed versions of agentactors, its backends and transports, and the peers."""
    out: dict[str, str] = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _color(name: str) -> str:
    if not name.startswith("agentactors"):
        return PEER
    return TRIO if "trio" in name else OURS


def _bars(ax: Any, names: list[str], values: list[float], label: str, *, log: bool = False,
          fmt: str = "{:,.1f}") -> None:
    ax.barh(names, values, color=[_color(n) for n in names])
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(label)
    for i, v in enumerate(values):
        ax.text(v, i, " " + fmt.format(v), va="center", fontsize=7)
    ax.tick_params(axis="y", labelsize=8)


def _w1i(w: dict[str, Any], ax: Any) -> str:
    ok = {k: v for k, v in w["results"].items() if "best_us" in v}
    _bars(ax, list(ok), [v["best_us"] for v in ok.values()], "µs per run, best round (log scale, lower is better)",
          log=True)
    return "W1 tool loop, independent harness (a fresh process each)"


def _w2(w: dict[str, Any], ax: Any) -> str:
    names = [f"{r['impl']} ({r['backend']})" for r in w["rows"]]
    _bars(ax, names, [r["ask_p50"] * 1e6 for r in w["rows"]], "ask round trip p50, µs (lower is better)")
    return "W2 messaging: ask round trip"


def _w4(w: dict[str, Any], ax: Any) -> str:
    ok = {k: v for k, v in w["results"].items() if "bytes_per_agent" in v}
    _bars(ax, list(ok), [v["bytes_per_agent"] / 1024 for v in ok.values()], "KB per idle agent (lower is better)",
          fmt="{:,.2f}")
    return f"W4 {w['agents']:,} idle agents: memory per agent"


def _w5(w: dict[str, Any], axes: Any) -> str:
    rows = sorted(w["rows"], key=lambda r: (r["mode"], r["concurrency"], r["impl"]))
    # Above: the figure, agentactors on trio (its own sender) over agentactors on asyncio, goal line at 1.3.
    ratios = [r for r in rows if r.get("trio_vs_asyncio") and "h11" in r["impl"]]
    ratio_ax, cpu_ax = axes
    _bars(ratio_ax, [f"agentactors trio ÷ asyncio · {r.get('scheme', 'http')} {r['mode']} c={r['concurrency']}"
                     for r in ratios],
          [r["trio_vs_asyncio"] for r in ratios], "agentactors' CPU per request on trio over asyncio's", fmt="{:.2f}×")
    ratio_ax.axvline(w.get("trio_goal", 1.3), color="black", linestyle="--", linewidth=1)
    names = [f"{r['impl']} · {r['mode']} c={r['concurrency']}" for r in rows]
    _bars(cpu_ax, names, [r["cpu_us"] for r in rows], "client CPU per request, µs (lower is better)", fmt="{:,.0f}")
    ratio_ax.get_gridspec().set_height_ratios([max(1, len(ratios)), max(1, len(rows))])
    ratio_ax.figure.set_size_inches(8, 1.5 + 0.26 * (len(ratios) + len(rows)))
    return "W5 HTTP path: client CPU per request (FakeVendor in another process; dashed: the trio goal)"


def _w7(w: dict[str, Any], ax: Any) -> str:
    _bars(ax, [r["impl"] for r in w["rows"]], [r["cpu_us_per_delta"] for r in w["rows"]],
          "client CPU per text delta, µs (lower is better)")
    return f"W7 streaming CPU: {w['runs']:,} concurrent streamed runs"


def _w8(w: dict[str, Any], ax: Any) -> str:
    names = [f"{policy} {q}" for policy in w["results"] for q in ("p50", "p99")]
    values = [w["results"][policy][q] for policy in w["results"] for q in ("p50", "p99")]
    _bars(ax, names, values, "run latency, s (lower is better)", fmt="{:,.2f}")
    return f"W8 scheduling: {w['runs']:,} runs × 3 calls through {w['slots']} slots"


def _w9(w: dict[str, Any], ax: Any) -> str:
    names = [f"{r['scheduling']}, max_wait={r['max_wait']}" for r in w["rows"]]
    _bars(ax, names, [r["goodput_vs_capacity"] * 100 for r in w["rows"]], "goodput, % of capacity (higher is better)",
          fmt="{:,.0f} %")
    return "W9 overload: 3× what one ProviderActor serves"


def _w11(w: dict[str, Any], ax: Any) -> str:
    _bars(ax, list(w["latency"]), [s["median"] * 1e6 for s in w["latency"].values()], "µs per turn (lower is better)",
          fmt="{:,.0f}")
    return "W11 sessions: turn latency"


def _w12(w: dict[str, Any], axes: Any) -> str:
    ok = [r for r in w["rows"] if "error" not in r]
    names = [r["impl"] for r in ok]
    panels = (("cpu_us_per_delta", "client CPU per delta, µs", "{:,.0f}"),
              ("peak_kb_per_run", "peak RSS per live run, KB", "{:,.1f}"),
              ("lag_p99_ms", "event-loop lag p99, ms", "{:,.0f}"),
              ("ttft_p99_s", "time to first token p99, s", "{:,.2f}"))
    for ax, (key, label, fmt) in zip(axes, panels, strict=True):
        _bars(ax, names, [r[key] or 0.0 for r in ok], label + " (lower is better)", fmt=fmt)
    return f"W12 {w['runs']:,} concurrent streaming runs (FakeVendor in another process)"


def _w13(w: dict[str, Any], ax: Any) -> str:
    _bars(ax, list(w["rows"]), [r["median"] for r in w["rows"].values()], "whole run, s (lower is better)",
          fmt="{:,.2f}")
    return "W13 partial output: a 1 MB typed answer streamed"


def _cold(w: dict[str, Any], axes: Any) -> str:
    imports = [r for r in w["rows"] if r.get("import_s")]
    runs = [r for r in w["rows"] if r.get("first_run_s")]
    _bars(axes[0], [r["impl"] for r in imports], [r["import_s"] * 1000 for r in imports],
          "import, ms (lower is better)", fmt="{:,.0f}")
    _bars(axes[1], [r["impl"] for r in runs], [r["first_run_s"] * 1000 for r in runs],
          "process start to first answer, ms", fmt="{:,.0f}")
    return "Import time and cold start (a fresh process each)"


# workload -> (file name, panels, plot)
PLOTS: dict[str, tuple[str, int, Callable[[dict[str, Any], Any], str]]] = {
    "W1I": ("w1_independent.png", 1, _w1i), "W2": ("w2_messaging.png", 1, _w2), "W4": ("w4_idle_agents.png", 1, _w4),
    "W5": ("w5_http.png", 2, _w5), "W7": ("w7_streaming.png", 1, _w7), "W8": ("w8_scheduling.png", 1, _w8),
    "W9": ("w9_overload.png", 1, _w9), "W11": ("w11_sessions.png", 1, _w11), "W12": ("w12_streams.png", 4, _w12),
    "W13": ("w13_partial.png", 1, _w13), "COLD": ("cold_start.png", 2, _cold),
}
# Written by _workloads.charts (kept: the README has embedded them since before this page).
LEGACY = {"W1": "w1_tool_loop.png", "W3": "w3_many_agents.png", "W6": "w6_chain_under_faults.png"}


def plots(report: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    """Write a PNG per workload in ``report`` that has a plot here; ``{workload: path}``."""
    written: dict[str, Path] = {}
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the bench extra brings it; without it, the page has its tables only
        return written
    for key, (name, panels, plot) in PLOTS.items():
        data = report["workloads"].get(key)
        if not data:
            continue
        fig, axes = plt.subplots(panels, 1, figsize=(8, 0.5 + 2.6 * panels if panels > 1 else 3.8))
        title = plot(data, axes)
        if panels == 1:  # a bar a line: tall enough for every label
            fig.set_size_inches(8, max(3.0, 1.0 + 0.26 * len(axes.patches)))
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        written[key] = out_dir / name
        fig.savefig(written[key], dpi=100)
        plt.close(fig)
    for key, name in LEGACY.items():
        if key in report["workloads"] and (out_dir / name).exists():
            written[key] = out_dir / name
    return written


def _markdown_html(text: str) -> str:
    """run.py's markdown (headings, tables, paragraphs) as HTML."""
    out: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if not table:
            return
        head, body = table[0], [r for r in table[1:] if not all(set(c) <= {"-"} for c in r)]
        out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>")
        out.extend("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
        out.append("</table>")
        table.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            table.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        flush()
        if line.startswith("## "):
            out.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.strip() and not line.startswith("# "):
            out.append(f"<p>{html.escape(line)}</p>")
    flush()
    return "\n".join(out)


def _section_key(heading: str) -> str | None:
    if heading.startswith("W1 tool loop, independent"):
        return "W1I"
    if heading.startswith("Import time"):
        return "COLD"
    word = heading.split()[0] if heading else ""
    return word if word.startswith("W") else None


def write(report: dict[str, Any], out_dir: Path) -> Path:
    """Write ``index.html`` (and the plots beside it) for ``report``; the page's path."""
    images = plots(report, out_dir)
    m = report["machine"]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>agentactors benchmarks</title><style>",
        "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}",
        "table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 6px}",
        "th{background:#f3f3f3}img{max-width:100%}h2{margin-top:2em;border-bottom:1px solid #ddd}",
        "</style></head><body>",
        f"<h1>agentactors benchmarks — {html.escape(str(m.get('date')))}</h1>",
        "<p>Every workload runs its implementations interleaved in one invocation; ratios to a baseline measured in "
        "the same run are what travel between machines. agentactors in red (trio lighter), peers in grey. How to "
        "read each workload: <code>benchmarks/README.md</code>.</p>",
        "<h2>Machine and versions</h2><table>",
        *(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>" for k, v in m.items()
          if k != "versions"),
        *(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in m.get("versions", {}).items()),
        "</table>",
    ]
    if report.get("smoke"):
        parts.append("<p><strong>Smoke run: tiny counts, the numbers mean nothing.</strong></p>")
    for chunk in _markdown_html(report.get("markdown", "")).split("<h2>"):
        if not chunk.strip():
            continue
        heading = html.unescape(chunk.split("</h2>", 1)[0])
        parts.append("<h2>" + chunk)
        image = images.pop(_section_key(heading) or "", None)  # once: W11 has two sections
        if image is not None:
            data = base64.b64encode(image.read_bytes()).decode()
            parts.append(f"<p><img alt='{html.escape(heading)}' src='data:image/png;base64,{data}'></p>")
    parts.append("</body></html>")
    page = out_dir / "index.html"
    page.write_text("\n".join(parts), encoding="utf-8")
    return page
