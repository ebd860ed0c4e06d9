"""`validate compare` keeps what it finished: each prediction is journalled as it finishes, a
stopped run resumes with only the rest, and a journal of other predictions is refused.
The predictions are stand-ins (the model is not run): what is tested is the bookkeeping."""
import json
from pathlib import Path

import pytest

from validate import compare, journal
from validate.datadir import DATA_DIR

DATA = DATA_DIR / "h100.json"
ONLY = "^(bank_conflict_demo|const_lookup)/"          # 6 kernels


class Stop(Exception):
    pass


def stand_in(calls, stop_after=None, fail=()):
    def predict(k, gpu, environment=None, time_limit_s=None, clock_mhz=None):
        if stop_after is not None and len(calls) == stop_after:
            raise Stop()                                  # the run is killed here
        calls.append(k["name"])
        if k["name"] in fail:
            return compare.Row(k["name"], "program", k["metrics"], {}, 1.0, error="TimeLimitExceeded: x")
        return compare.Row(k["name"], "program", k["metrics"],
                           {compare.DURATION: 1000.0 + len(k["name"])}, 1.0)
    return predict


def run(tmp_path, monkeypatch, calls, resume=False, **kw):
    monkeypatch.setattr(compare, "predict", stand_in(calls, **kw))
    return compare.compare(DATA, "h100", ONLY, jobs=1, journal_path=tmp_path / "j.jsonl", resume=resume)


def test_a_stopped_compare_resumes_with_only_the_kernels_it_had_not_finished(tmp_path, monkeypatch):
    first: list[str] = []
    with pytest.raises(Stop):
        run(tmp_path, monkeypatch, first, stop_after=4)
    second: list[str] = []
    rows, summary, _ = run(tmp_path, monkeypatch, second, resume=True)
    assert len(first) == 4 and len(second) == 2 and not set(first) & set(second)
    assert summary["resumed"] == 4 and len(rows) == 6
    assert [r.predicted[compare.DURATION] for r in rows] == [1000.0 + len(r.name) for r in rows]


def test_a_kernel_without_prediction_is_predicted_again_on_resume(tmp_path, monkeypatch):
    first: list[str] = []
    run(tmp_path, monkeypatch, first, fail=("const_lookup/large",))
    second: list[str] = []
    rows, summary, _ = run(tmp_path, monkeypatch, second, resume=True)
    assert second == ["const_lookup/large"] and summary["resumed"] == 5


def test_a_torn_last_line_is_ignored(tmp_path, monkeypatch):
    with pytest.raises(Stop):
        run(tmp_path, monkeypatch, [], stop_after=3)
    path = tmp_path / "j.jsonl"
    path.write_text(path.read_text() + '{"name": "const_lookup/lar')   # killed mid-write
    second: list[str] = []
    _, summary, _ = run(tmp_path, monkeypatch, second, resume=True)
    assert summary["resumed"] == 3 and len(second) == 3


def test_a_journal_of_another_model_is_refused_with_the_reason(tmp_path, monkeypatch):
    with pytest.raises(Stop):
        run(tmp_path, monkeypatch, [], stop_after=2)
    path = tmp_path / "j.jsonl"
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    head["model_sha256"] = "0" * 64
    path.write_text("\n".join([json.dumps(head)] + lines[1:]) + "\n")
    with pytest.raises(journal.JournalMismatch, match="model source differs"):
        run(tmp_path, monkeypatch, [], resume=True)


def test_a_fresh_run_replaces_the_journal_and_says_how_much_it_replaced(tmp_path, monkeypatch):
    with pytest.raises(Stop):
        run(tmp_path, monkeypatch, [], stop_after=2)
    calls: list[str] = []
    _, summary, _ = run(tmp_path, monkeypatch, calls)
    assert summary["journal_replaced"] == 2 and len(calls) == 6


def test_the_cli_writes_the_result_and_removes_the_journal(tmp_path, monkeypatch):
    from validate import cli
    monkeypatch.setattr(compare, "predict", stand_in([]))
    out = tmp_path / "cmp.json"
    assert cli.main(["compare", "--data", str(DATA), "--only", ONLY, "--jobs", "1", "--json", "--out", str(out)]) == 0
    assert len(json.loads(out.read_text())["kernels"]) == 6
    assert not Path(str(out) + ".partial.jsonl").exists()


def test_the_cli_refuses_a_mismatched_resume_in_one_line(tmp_path, monkeypatch, capsys):
    from validate import cli
    out = tmp_path / "cmp.json"
    part = Path(str(out) + ".partial.jsonl")
    part.write_text(json.dumps({"journal": 1, "data_sha256": "x", "preset": "h100", "model_sha256": "y"}) + "\n")
    assert cli.main(["compare", "--data", str(DATA), "--only", ONLY, "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "measurement file differs" in err


@pytest.mark.parametrize("key, value, header", [("max_waves", 8, "preset, 8 waves"), ("mode", "full", "preset, full")],
                         ids=["max-waves", "timing-mode"])
def test_a_sample_depth_or_timing_mode_reaches_the_model_and_keeps_its_own_journal(tmp_path, monkeypatch, key, value,
                                                                                  header):
    """`--max-waves N` and `--timing-mode full` go to every prediction's timing options and into the journal's
    header, so a resume never mixes predictions of two sample depths or modes."""
    seen = []
    option = {"max_waves": "max_waves", "mode": "timing_mode"}[key]

    def predict(k, gpu, environment=None, time_limit_s=None, clock_mhz=None):
        seen.append((environment or {}).get(key))
        return compare.Row(k["name"], "program", k["metrics"], {compare.DURATION: 1000.0}, 1.0)
    monkeypatch.setattr(compare, "predict", predict)
    path = tmp_path / "j.jsonl"
    compare.compare(DATA, "h100", ONLY, jobs=1, journal_path=path)
    with pytest.raises(journal.JournalMismatch, match=header.split(", ")[1]):   # the default's journal is not reused
        compare.compare(DATA, "h100", ONLY, jobs=1, journal_path=path, resume=True, **{option: value})
    compare.compare(DATA, "h100", ONLY, jobs=1, journal_path=path, **{option: value})
    assert seen == [None] * 6 + [value] * 6
    assert json.loads(path.read_text().splitlines()[0])["clock"] == header
