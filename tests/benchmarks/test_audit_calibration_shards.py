"""A resumed ``audit_calibration.py --workers N`` shards the audits still to run, so every worker has work while
any is left (it sharded the whole plan before, and a worker whose cell was finished sat idle)."""

from helpers import import_benchmark

calibration = import_benchmark("audit_calibration")


def _row(sampler, program, seed):
    return {"sampler": sampler, "program": program, "seed": seed}


def test_workers_share_what_is_left_and_together_run_all_of_it(tmp_path):
    tasks = calibration.plan(["numpyro-nuts", "stan-nuts"], ["counts"], 6)
    path = tmp_path / "rows.jsonl"
    for seed in range(6):  # NumPyro's cell finished, Stan's not started
        calibration.append_row(path, _row("numpyro-nuts", "counts", seed))
    left = calibration.pending(tasks, path)
    assert left == [("stan-nuts", "counts", seed) for seed in range(6)]
    shards = [calibration.shard(left, f"{i}/2") for i in range(2)]
    assert all(len(s) == 3 for s in shards)  # both workers busy
    assert sorted(t for s in shards for t in s) == sorted(left)  # together, every audit left, once
    # The whole plan sharded as before leaves one worker with only finished audits.
    assert {t[0] for t in calibration.shard(tasks, "0/2")} == {"numpyro-nuts"}
