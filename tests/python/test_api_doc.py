"""docs/api.md's example as a reader uses it: its C block compiled against the public header
alone (include/tsrnn/tsrnn.h) and linked with the build's libtsrnn.so, then run in a folder
holding air_passengers.csv: it prints the command line's first-step loss, val_loss and
24-step forecast (tsrnn-worker on examples/air_passengers.ini)."""

import os
import re
import shutil

import pytest

from conftest import AIR_CSV, LIBRARY, ROOT, csv_column, first, losses, printed_forecast, run


def test_the_example_of_docs_api_md_gives_the_command_lines_numbers(cli_run, tmp_path):
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler (cc) on PATH")
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```c\n(.*?)```", text, re.S)
    examples = [b for b in blocks if "int main(" in b]
    assert len(examples) == 1, "docs/api.md: expected one C block with main()"
    (tmp_path / "air.c").write_text(examples[0], encoding="utf-8")
    shutil.copy(AIR_CSV, tmp_path / "air_passengers.csv")
    run([compiler, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", ROOT / "include",
         "air.c", "-o", "air", LIBRARY, "-Wl,-rpath," + str(LIBRARY.parent)], cwd=tmp_path)
    out = run([tmp_path / "air"], cwd=tmp_path)
    train_loss, val_loss = losses(cli_run)
    assert "first step %s, val_loss %s" % (first(train_loss), val_loss[-1]) in out
    assert printed_forecast(out) == csv_column(cli_run / "forecast.csv", "#Passengers")
