"""Where the team's shared test data is: ``../shared/data`` beside the checkout, never an
absolute path. Tests that need it skip with a reason that names the place they looked."""
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PMU = DATA / "pmu"
FRAMEWORK = DATA / "framework"
LAYERS = DATA / "layers"


def needs(path: Path):
    """A skip marker for tests that read ``path`` (a file or folder under DATA)."""
    return pytest.mark.skipif(not path.exists(), reason=f"shared data not present at {path}")
