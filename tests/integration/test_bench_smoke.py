"""The benchmark harness at a tiny size, so it never rots (the real run is `make bench`)."""

from __future__ import annotations

import pytest

from bench.run import main
from bench.scale import main as scale_main


# A hang guard, far above a loaded machine's run (the smoke spawns ~35 interpreters: the AWS endpoint, cold
# starts, every container of the local runtime; 10 minutes at a load average of 30 on 2 cores).
@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_a_smoke_run_writes_every_figure_and_the_report_renders_again_from_its_measured_file(tmp_path):
    # Given a smoke run of the whole benchmark
    out = tmp_path / "BENCHMARKS.md"
    assert main(["--smoke", "--out", str(out)]) == 0
    report = out.read_text()
    # Then the report has every figure
    for section in ("## 1. Cost per journey", "## 2. Critical path", "## 3. Local runtime under load",
                    "## 4. Consumer drain rate", "## 5. Cold start", "## 6. Refusing the worst bodies",
                    "Billed units per journey by table and index",
                    "### Dollars per 1M journeys", "| **total** |", "journey-changes", "SMOKE RUN",
                    "modelled billed ms", "**CPU-limited, ", " ms of CPU per event**", "load average",
                    "| **floor** |"):  # fmt: skip
        assert section in report, section
    assert "| simulate | 4 |" in report  # the critical path of a loans-backed command
    assert "| unclosed-escapes | " in report  # the input guard's first worst body
    # And rendering its measured file again, measuring nothing, gives the same report
    again = tmp_path / "again.md"
    assert main(["--render-only", "--measured", str(out.with_suffix(".json")), "--out", str(again)]) == 0
    assert again.read_text() == report
    # And the scale model runs on what it measured
    scale = tmp_path / "SCALE.md"
    assert scale_main(["--measured", str(out.with_suffix(".json")), "--out", str(scale)]) == 0
    assert "journey-changes index: its most frequent type's shards |" in scale.read_text()
