import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))

# Data sets: tests read the shared data folder next to the repository (never a
# download). An explicit PMP_DATA_DIR wins.
_SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
if not os.environ.get("PMP_DATA_DIR") and _SHARED_DATA.is_dir():
    os.environ["PMP_DATA_DIR"] = str(_SHARED_DATA)
