"""The measurements' one location (validate/datadir.py): an old validate/data/ path is refused in
one usage line naming the new file; the committed files are where DATA_DIR says."""
import argparse
import subprocess
import sys

import pytest

from validate.datadir import DATA_DIR, ROOT, measurement_file


def test_committed_measurements_sit_in_data_dir_outside_the_packages():
    assert (DATA_DIR / "h200.json").is_file() and (DATA_DIR / "ncu_replay.json").is_file()
    assert not (ROOT / "validate" / "data").exists()


def test_an_old_validate_data_path_names_the_new_one():
    with pytest.raises(argparse.ArgumentTypeError, match=r"give data/measurements/h200\.json$"):
        measurement_file("validate/data/h200.json")
    assert measurement_file("data/measurements/h200.json").name == "h200.json"
    assert measurement_file("/tmp/myvalidate/data/h200.json").name == "h200.json"   # another folder: kept


def test_gpusim_data_dir_overrides_the_folder(tmp_path):
    out = subprocess.run([sys.executable, "-c", "from validate.datadir import DATA_DIR; print(DATA_DIR)"],
                         capture_output=True, text=True, cwd=ROOT, check=True,
                         env={"GPUSIM_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == str(tmp_path)
