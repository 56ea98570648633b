"""examples/pymc_eight_schools.py samples with graphjit and writes its plot."""

from example_modules import load_example


def test_eight_schools_example_samples_and_plots(tmp_path, capsys):
    example = load_example("pymc_eight_schools")
    out = tmp_path / "schools.png"
    result = example.main(["--draws", "50", "--chains", "1", "--out", str(out)])
    assert out.stat().st_size > 10_000
    assert -10.0 < result["mu"] < 20.0 and result["tau"] > 0.0
    assert "GRAPHJIT:" in capsys.readouterr().out
