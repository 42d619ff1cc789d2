"""notebooks/tour.ipynb: stored without outputs, and runs from top to bottom."""

from __future__ import annotations

from pathlib import Path

import pytest

# The notebook extra (nbformat, nbclient, a kernel, matplotlib) is optional.
nbformat = pytest.importorskip("nbformat")
NotebookClient = pytest.importorskip("nbclient").NotebookClient
pytest.importorskip("matplotlib")

TOUR = Path(__file__).parent.parent / "notebooks" / "tour.ipynb"


def _text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def test_tour_is_stored_without_outputs() -> None:
    notebook = nbformat.read(TOUR, as_version=4)  # type: ignore[no-untyped-call]
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code
    assert all(cell.outputs == [] and cell.execution_count is None for cell in code)


def test_tour_runs_and_its_checks_hold(tmp_path: Path) -> None:
    notebook = nbformat.read(TOUR, as_version=4)  # type: ignore[no-untyped-call]
    client = NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    printed = "\n".join(_text(cell) for cell in code)
    assert (
        "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 1251, 1252, 1253, 1254]" in printed
    )
    assert "seeded, epoch 0: [176411, 176412" in printed
    assert "resume == the uninterrupted suffix at every position tried" in printed
    assert "identical to the uninterrupted run: True" in printed
    assert "distinct file orders among 12 epochs: 12" in printed
    assert "every record exactly once: True" in printed
    images = [o for c in code for o in c.outputs if "image/png" in o.get("data", {})]
    # Order scatter, epoch heat map, checkpoint, resume stitching, and (with the source
    # checkout's TFDS fixture, as in CI) a decoded example's images.
    assert len(images) == 5
