"""What a newcomer tries first: ``bdmc --version``."""

from typer.testing import CliRunner

from bdmc.cli import app
from bdmc.version import __version__

runner = CliRunner()


def test_version_prints_the_installed_version_and_exits():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"bdmc {__version__}"
