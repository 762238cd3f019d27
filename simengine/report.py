"""``simengine report OUT.h5|SUMMARY.csv``: one self-contained HTML page to open in a browser.

For an output file: the figures of ``simengine plot`` (embedded as base64 PNG, or SVG with
``fmt="svg"``), the scenario as stored, provenance (simengine version, creation time, solver,
completeness, parts), the results (network statistics, or the last observables row of a field
run) and ``simengine info``'s summary.  For a sweep summary: its figures, the per-task table and
the grouped table (mean ± s.e. over seeds) when ``NAME-grouped.csv`` is beside it.  The page has no
script and loads nothing from elsewhere: it can be mailed or archived as it is.
"""
from __future__ import annotations

import base64
import html
import tempfile
from pathlib import Path

from .errors import UserError

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1200px;
padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:.85em}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.85em;color:#555}.wide{overflow-x:auto}
"""


def _esc(v) -> str:
    return html.escape(str(v), quote=True)


def _table(columns, rows, limit=2000) -> str:
    head = "".join(f"<th>{_esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_esc(_cell(r.get(c, '')))}</td>" for c in columns)
                   + "</tr>" for r in rows[:limit])
    more = (f"<p>… {len(rows) - limit} more rows in the CSV file.</p>"
            if len(rows) > limit else "")
    return f'<div class="wide"><table><tr>{head}</tr>{body}</table></div>{more}'


def _cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{f:.6g}" if isinstance(v, str) and any(c in v for c in ".eE") else str(v)


def _figure(path: Path) -> str:
    data = path.read_bytes()
    mime = {".png": "image/png", ".svg": "image/svg+xml", ".gif": "image/gif"}[path.suffix]
    src = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return (f'<figure><img src="{src}" alt="{_esc(path.stem)}">'
            f"<figcaption>{_esc(path.name)}</figcaption></figure>")


def _figures(source: Path, fmt: str, log) -> list[str]:
    from .plot import plot_file

    with tempfile.TemporaryDirectory(prefix="simengine-report-") as tmp:
        paths = plot_file(source, tmp, gif=False, log=log, fmt=fmt, dpi=100)
        return [_figure(Path(p)) for p in paths if Path(p).suffix in (".png", ".svg")]


def _page(title, sections) -> str:
    body = "".join(f"<h2>{_esc(h)}</h2>{content}" for h, content in sections if content)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_esc(title)}</title><style>{_CSS}</style></head>"
            f"<body><h1>{_esc(title)}</h1>{body}</body></html>\n")


def _output_sections(path: Path, fmt: str, log):
    import numpy as np

    from .io.reader import Result

    with Result(path) as r:
        a = r.file.attrs
        prov = [{"key": k, "value": (v.decode() if isinstance(v, bytes) else v)}
                for k, v in a.items() if k != "scenario"]
        scenario = a.get("scenario", "")
        scenario = scenario.decode() if isinstance(scenario, bytes) else str(scenario)
        if r.kind == "network":
            stats = [{"statistic": k, "value": v} for k, v in r.statistics.items()]
            results = ("statistics", _table(["statistic", "value"], stats))
        else:
            obs = r.observables
            last = {k: float(np.asarray(v)[-1]) for k, v in obs.items()
                    if np.ndim(v) == 1 and len(v) and not k.endswith("_k")}  # S(k) rows: figures
            results = ("last observables row",
                       _table(["observable", "value"],
                              [{"observable": k, "value": v} for k, v in last.items()]))
        summary = r.summary()
        if r.kind == "field":  # the coarsening fits, as `simengine info` prints them
            from .coarsening import fit_lines

            summary = "\n".join([summary, *fit_lines(r.observables, r.scenario, rule=True)])
        title = f"{r.name} ({r.kind} run)"
    sections = [("figures", "".join(_figures(path, fmt, log))), results,
                ("scenario", f"<pre>{_esc(scenario)}</pre>"),
                ("provenance", _table(["key", "value"], prov)),
                ("simengine info", f"<pre>{_esc(summary)}</pre>")]
    return title, sections


def _summary_sections(path: Path, fmt: str, log):
    from .summary import read_csv
    from .summary_plot import _summary_of

    columns, rows = _summary_of(path)
    sections = [("figures", "".join(_figures(path, fmt, log))),
                (f"tasks ({len(rows)})", _table(columns, rows))]
    if path.name.endswith("-summary.csv"):
        grouped = path.with_name(path.name[:-len("-summary.csv")] + "-grouped.csv")
        if grouped.exists():
            gcols, grows = read_csv(grouped)
            sections.append(("grouped over seeds (mean, std, s.e.)", _table(gcols, grows)))
    return f"sweep {path.name.removesuffix('-summary.csv')}", sections


def write_report(path, out=None, fmt="png", log=None) -> Path:
    """Write the HTML report of an output file or a sweep summary CSV; returns its path
    (default ``<stem>-report.html`` beside the input)."""
    from .io.output_write import check_target, write_file
    from .io.reader import check_input_file

    path = Path(path)
    check_input_file(path, "an output file or a sweep summary CSV")  # stat: a FIFO never blocks
    if fmt not in ("png", "svg"):
        raise UserError(f"report figures: expected png or svg, got {fmt!r}")
    log = log or (lambda msg: None)
    target = Path(out) if out else path.with_name(path.stem + "-report.html")
    check_target(target, (path,), "report")  # before the figures are drawn
    title, sections = (_summary_sections if path.suffix.lower() == ".csv"
                       else _output_sections)(path, fmt, log)
    return write_file(target, _page(title, sections).encode("utf-8"), (path,), "report")
