"""The reference chosen after the run: `report NAME --baseline V` and `diff NAME:V NAME:W` judge
the stored runs of a real experiment (a command and a suite task, so scores too) exactly as a
spec naming V its baseline would have."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import cli

SPEC = """
name = "pick"
blocks = 3
suite = { name = "cpu", workloads = ["aes_xts"], multi_core = false, shared = false }

[[workloads]]
name = "sleepy"
command = ["sh", "-c", "sleep 0.0$X"]

[[variants]]
name = "a"
env = { X = "1" }

[[variants]]
name = "b"
env = { X = "2" }

[[variants]]
name = "c"
env = { X = "3" }
"""


def test_a_baseline_chosen_after_the_run_reads_as_the_specs_own(tmp_path: Path) -> None:
    spec = tmp_path / "pick.toml"
    spec.write_text(SPEC)
    cli("run", str(spec), "--quick", check=True)
    # the same runs with b as the spec's baseline: the bundle's spec and flags edited, imported elsewhere
    bundle = tmp_path / "pick.json"
    cli("export", "pick-quick", "-o", str(bundle), check=True)
    data = json.loads(bundle.read_text())
    data["experiment"]["spec"]["baseline"] = "b"
    for variant in data["experiment"]["variants"]:
        variant["is_baseline"] = variant["name"] == "b"
    bundle.write_text(json.dumps(data))
    other = str(tmp_path / "other.db")
    cli("import", str(bundle), "--db", other, check=True)
    as_spec = json.loads(cli("report", "pick-quick", "--db", other, "--format", "json", check=True).stdout)
    chosen = json.loads(cli("report", "pick-quick", "--baseline", "b", "--format", "json", check=True).stdout)
    assert chosen["baseline"] == "b" and chosen["scores"]["reference"] == "b"
    for key in ("rows", "geomean", "scores", "warnings", "runs"):
        assert chosen[key] == as_spec[key], key
    assert {r["variant"] for r in chosen["rows"]} == {"a", "c"} and chosen["scores"]["rows"]
    default = json.loads(cli("report", "pick-quick", "--format", "json", check=True).stdout)
    assert default["baseline"] == "a" and default["rows"] != chosen["rows"]

    # two variants of one experiment: paired, the report's rows of c against b, scores included
    diffed = json.loads(cli("diff", "pick-quick:b", "pick-quick:c", "--format", "json", check=True).stdout)
    assert diffed["variants"] == ["b", "c"] and diffed["baseline"] == "b"
    assert diffed["rows"] == [r for r in chosen["rows"] if r["variant"] == "c"]
    assert all(r["pairs"] == 3 for r in diffed["rows"] if r["verdict"] != "-")
    assert diffed["scores"]["rows"] == [r for r in chosen["scores"]["rows"] if r["variant"] in ("b", "c")]
    assert "variants of one experiment" in diffed["warnings"][0]
    assert "scores: c vs b" in cli("diff", "pick-quick:b", "pick-quick:c", check=True).stdout

    unknown = cli("report", "pick-quick", "--baseline", "nope")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.strip().splitlines() == [
        "benchlab: --baseline: experiment 'pick-quick' has no variant 'nope' (it has a, b, c)"
    ]
