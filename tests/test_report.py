"""``simengine report``: one self-contained HTML page, checked in a real headless browser
(Debian's chromium driven by Playwright): no console errors, every figure decoded."""
import os
import re
import shutil
from pathlib import Path

import pytest

import simengine
from simengine.cli import main

CHROMIUM = next((p for p in (shutil.which("chromium"), "/usr/bin/chromium",
                             shutil.which("chromium-browser")) if p and Path(p).exists()), None)
INSTALL = ("apt-get install chromium (Debian's package; Playwright never downloads a browser "
           "here) and pip install playwright (the test extra)")


@pytest.fixture(scope="module")
def browser():
    """A headless chromium through Playwright; in CI (CI=true, or SIMENGINE_REQUIRE_BROWSER set
    as .ci/run does) a missing browser fails the test, elsewhere it skips saying why."""
    why = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        why = "playwright is not installed"
    if why is None and CHROMIUM is None:
        why = "no chromium executable found"
    if why is None:
        try:
            pw = sync_playwright().start()
            b = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                   args=["--no-sandbox", "--disable-gpu"])
        except Exception as exc:  # noqa: BLE001 - say plainly why no browser started
            why = f"chromium at {CHROMIUM} did not start: {str(exc).splitlines()[0]}"
    if why is not None:
        msg = f"no headless browser for the report test: {why}; {INSTALL}"
        if os.environ.get("CI", "").lower() == "true" or os.environ.get("SIMENGINE_REQUIRE_BROWSER"):
            pytest.fail(msg)
        pytest.skip(msg)
    yield b
    b.close()
    pw.stop()


def load(browser, page_path):
    page = browser.new_page()
    problems = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: problems.append(f"request {r.url}")
            if not r.url.startswith(("file:", "data:")) else None)
    page.goto(Path(page_path).resolve().as_uri(), wait_until="load")
    widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
    text = page.inner_text("body")
    page.close()
    return problems, widths, text


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    field = simengine.run({"kind": "field", "name": "rep-field", "grid": {"shape": [16, 16]},
                           "time": {"dt": 0.01, "steps": 60}, "solver": {"backend": "cpu"},
                           "output": {"snapshot_every": 30, "observables_every": 10}},
                          d / "f.h5", log=lambda m: None)
    net = simengine.run({"kind": "network", "name": "rep-net",
                         "graph": {"generator": {"type": "barabasi_albert", "n": 60, "m": 2,
                                                 "seed": 1}},
                         "solver": {"backend": "cpu"}}, d / "n.h5", log=lambda m: None)
    return d, field, net


def test_reports_of_outputs_render_in_a_browser(browser, outputs, capsys):
    d, field, net = outputs
    for out, must in ((field, ["rep-field (field run)", "free_energy", "provenance",
                               "simengine_version"]),
                      (net, ["rep-net (network run)", "mean_distance", "barabasi_albert"])):
        assert main(["report", str(out)]) == 0
        page = Path(capsys.readouterr().out.strip())
        assert page == out.with_name(out.stem + "-report.html")
        html_text = page.read_text()
        assert not re.search(r"""(src|href)=["'](?!data:)""", html_text)   # self-contained
        problems, widths, text = load(browser, page)
        assert problems == []
        assert len(widths) >= 3 and all(w > 0 for w in widths), widths
        for m in must:
            assert m in text


def test_report_of_a_sweep_summary_and_svg_figures(browser, tmp_path, capsys):
    from test_plot_fits import _summary

    csv = _summary(tmp_path, "graph.generator.n", [100, 1000, 10000])
    assert main(["report", str(csv), "--out", str(tmp_path / "s.html"), "--format", "svg"]) == 0
    problems, widths, text = load(browser, tmp_path / "s.html")
    assert problems == [] and widths and all(w > 0 for w in widths)
    assert "tasks (6)" in text and "graph.generator.n" in text


def test_report_of_a_missing_file_is_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path / "none.h5")]) == 2
    assert capsys.readouterr().err.strip() == f"simengine: error: {tmp_path / 'none.h5'}: no such file"
