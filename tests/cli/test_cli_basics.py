"""What a newcomer tries first: ``bdmc --version``."""

from typer.testing import CliRunner

from bdmc.cli import app
from bdmc.version import __version__

runner = CliRunner()


def test_version_prints_the_installed_version_and_exits():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"bdmc {__version__}"


def test_kernel_option_reaches_the_runs_and_the_settings(tmp_path, monkeypatch):
    """``--kernel nuts`` runs bdmc's NUTS (step size from the pilot) and is recorded; a kernel the model lacks
    (Gibbs on a model without conditionals) and an unknown name are refused, naming --kernel."""
    import json

    from bdmc.experiments import sandwich_runs
    from bdmc.kernels import NUTS

    seen = {}
    real_run = sandwich_runs.run_sandwich

    def spy(key, model, plan, **kwargs):
        seen["kernel"] = plan.kernel
        return real_run(key, model, plan, **kwargs)

    monkeypatch.setattr(sandwich_runs, "run_sandwich", spy)
    out = tmp_path / "nuts"
    result = runner.invoke(app, ["sandwich", "--model", "gaussian-mean", "--option", "n=5", "--kernel", "nuts",
                                 "--steps", "5", "--runs", "2", "--no-progress", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert isinstance(seen["kernel"], NUTS) and seen["kernel"].step_size > 0
    assert json.loads((out / "settings.json").read_text())["settings"]["kernel"] == "nuts"
    for bad, message in ((["--model", "gaussian-mean", "--kernel", "slice"], "--kernel: unknown kernel 'slice'"),
                         (["--numpyro", "x.py:f", "--observed", "y", "--kernel", "gibbs"], None)):
        result = runner.invoke(app, ["sandwich", *bad, "--out", str(tmp_path / "bad")])
        assert result.exit_code != 0
        if message:
            assert message in " ".join(result.output.split())
