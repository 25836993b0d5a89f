"""The HTML report in a real browser: Debian's Chromium, headless, through selenium. Real quick
experiments (IPC and a command; a sweep; the CPU suite) are run and reported through the CLI,
each page is opened with no network, and it must log no error, fit a laptop's width, and draw
every plot: each SVG's screenshot must have many pixels off the background, in several colours
(a blank SVG, checked first, fails that)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import cli

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WIDTH = 1280  # a laptop's width, in CSS pixels
SWEEP = """
name = "curve"
blocks = 3
[[workloads]]
name = "t"
command = ["true"]
[[variants]]
name = "none"
[sweep]
fit = "value"
[[sweep.parameters]]
field = "env.N"
values = [1, 2, 4]
"""

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("Chromium is not installed (Debian's chromium and chromium-driver packages)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", f"--window-size={WIDTH},900", "--disable-gpu", "--proxy-server=127.0.0.1:9"):
        options.add_argument(arg)  # a proxy that refuses: a page that fetched anything would log the failure
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def drawn(png: bytes) -> tuple[float, int]:
    """The share of pixels that are not the background (white), and how many colours there are."""
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3)
    inked = float((pixels.min(axis=1) < 235).mean())
    return inked, len(np.unique(pixels // 16, axis=0))


def open_page(browser: Any, path: Path) -> list[Any]:
    """The page opened, checked for console errors and width; its plots."""
    from selenium.webdriver.common.by import By

    browser.get(path.as_uri())
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    assert browser.execute_script("return document.documentElement.scrollWidth") <= WIDTH
    return list(browser.find_elements(By.CSS_SELECTOR, "svg.plot"))


def assert_plots_drawn(browser: Any, plots: list[Any]) -> None:
    for svg in plots:
        browser.execute_script("arguments[0].scrollIntoView()", svg)
        ink, colours = drawn(svg.screenshot_as_png)
        assert ink > 0.02 and colours >= 4, (svg.get_attribute("aria-label"), ink, colours)


def report(name: str, tmp_path: Path) -> Path:
    page = tmp_path / f"{name}.html"
    cli("report", name, "--format", "html", "-o", str(page), check=True)
    return page


def test_a_blank_plot_fails_the_check(browser: Any, tmp_path: Path) -> None:
    blank = tmp_path / "blank.html"
    blank.write_text('<!DOCTYPE html><html><body><svg class="plot" width="400" height="200"></svg></body></html>')
    (svg,) = open_page(browser, blank)
    ink, colours = drawn(svg.screenshot_as_png)
    assert ink < 0.02 and colours < 4


def test_ipc_and_command_workloads_render_with_every_plot_drawn(browser: Any, tmp_path: Path) -> None:
    cli("compare", "-w", "ipc.pipe.pingpong roundtrips=2000", "-w", "ipc.unix.latency iterations=200", "--cmd", "true",
        "-V", "base", "-V", "pin: cpus=0", "-n", "3", "--name", "web", "--allow-failures", check=True)  # fmt: skip
    plots = open_page(browser, report("web", tmp_path))
    labels = [p.get_attribute("aria-label") for p in plots]
    assert "ipc.pipe.pingpong latency histogram" in labels and "ipc.unix.latency/other latency histogram" in labels
    assert "ipc.pipe.pingpong: latency_p99" in labels and "cmd: wall" in labels
    assert not [label for label in labels if label.endswith("percentiles")]  # every run has its histograms
    assert_plots_drawn(browser, plots)


def test_a_sweep_renders_its_curve(browser: Any, tmp_path: Path) -> None:
    spec = tmp_path / "curve.toml"
    spec.write_text(SWEEP)
    cli("run", str(spec), "--allow-failures", check=True)
    plots = open_page(browser, report("curve", tmp_path))
    assert [p.get_attribute("aria-label") for p in plots] == ["t: wall along env.N", "t: wall"]
    assert_plots_drawn(browser, plots)


@pytest.mark.slow
def test_cpu_scores_render_as_bars(browser: Any, tmp_path: Path) -> None:
    cli("score", "--quick", "-w", "aes_xts", "-V", "a", "-V", "b", "--name", "suite", "--allow-failures", check=True)
    plots = open_page(browser, report("suite", tmp_path))
    labels = [p.get_attribute("aria-label") for p in plots]
    assert labels[:2] == ["cpu suite: single-core scores", "cpu suite: multi-core scores"]
    assert "cpu.aes_xts.single: items_per_second" in labels
    assert_plots_drawn(browser, plots)


def test_a_differential_flame_graph_renders_with_frames_judged_worse_and_better(browser: Any, tmp_path: Path) -> None:
    """The page's flame graphs of simulated profiles whose verdicts are known (seeded: one
    function judged worse, one better), drawn by the page's own renderer: Chromium shows both
    colours. A real run's verdicts depend on the machine's noise; the colours must not."""
    from selenium.webdriver.common.by import By

    from benchlab.analysis.profiles import judge_profiles
    from benchlab.analysis.simulation import simulate_profiles
    from benchlab.report.formats.html import flames, page
    from benchlab.stats.judge import Settings

    seconds = np.array([0.30, 0.20, 0.12, 0.10, 0.08, 0.05, 0.03, 0.02])
    changed = seconds.copy()
    changed[2] *= 1.6
    changed[1] *= 0.5
    runs = simulate_profiles(np.random.default_rng(5), {"A": seconds, "B": changed}, blocks=5, noise=0.02)
    profiles = judge_profiles(runs, ["w"], ["A", "B"], Settings(baseline="A"), {})
    verdicts = {r.name: r.verdict for r in profiles.rows if r.level == "function"}
    assert verdicts["f2"] == "worse" and verdicts["f1"] == "better"
    html = tmp_path / "flames.html"
    html.write_text(
        f"<!DOCTYPE html><html><head><style>{page.CSS}</style></head><body>{''.join(flames.section(profiles, 'A'))}</body></html>"
    )
    open_page(browser, html)
    graphs = browser.find_elements(By.CSS_SELECTOR, "svg.flame")
    assert len(graphs) == 2  # B's, coloured by judged change, and A's own
    browser.execute_script("arguments[0].scrollIntoView()", graphs[0])
    pixels = np.asarray(Image.open(io.BytesIO(graphs[0].screenshot_as_png)).convert("RGB")).reshape(-1, 3).astype(int)
    r, g, b = pixels[:, 0], pixels[:, 1], pixels[:, 2]
    reddish = int(((r - np.maximum(g, b)) > 40).sum())
    bluish = int(((b - np.maximum(r, g)) > 40).sum())
    assert reddish > 50 and bluish > 50, (reddish, bluish)
