"""Challenge metrics against hand-computed values (definitions in ../shared/data/ha-vln/README.md)."""

from __future__ import annotations

import pytest

from havln_robot.sim.metrics import aggregate, challenge_score, episode_metrics, load_collision_baseline


def test_episode_metrics_by_hand():
    m = episode_metrics(
        ne=2.0, stopped=True, path_length=12.0, geodesic=10.0, collisions_human=3, collisions_static=5, steps=40, baseline=1
    )
    assert m.success and m.spl == pytest.approx(10.0 / 12.0)
    assert (m.tcr, m.cr, m.sr) == (2, 1, 0)
    # baseline covers all collisions: collision-free success
    m = episode_metrics(ne=2.9, stopped=True, path_length=8.0, geodesic=10.0, collisions_human=1, baseline=2)
    assert m.success and m.spl == pytest.approx(1.0) and (m.tcr, m.cr, m.sr) == (0, 0, 1)
    # no STOP, or NE not below 3.0 m: failure
    assert not episode_metrics(ne=0.5, stopped=False, path_length=5, geodesic=5, collisions_human=0).success
    assert not episode_metrics(ne=3.0, stopped=True, path_length=5, geodesic=5, collisions_human=0).success


def test_aggregate_and_score_by_hand():
    a = episode_metrics(ne=1.0, stopped=True, path_length=10.0, geodesic=10.0, collisions_human=0)
    b = episode_metrics(ne=5.0, stopped=True, path_length=20.0, geodesic=10.0, collisions_human=4, baseline=1)
    agg = aggregate([a, b], with_humans=[False, True])
    assert agg.n == 2 and agg.success_rate == 0.5 and agg.sr == 0.5
    assert agg.ne == pytest.approx(3.0) and agg.ne_median == pytest.approx(3.0)
    assert agg.tcr == pytest.approx(1.5)  # (0 + 3) / 2
    assert agg.cr == pytest.approx(1.0) and agg.cr_denominator == 1  # one human-influenced episode
    nav = 0.8 * 0.5 + 0.2 * 3 / (3 + 3.0)
    soc = 0.75 * (1 - 1.0) + 0.25 / (1 + 1.5)
    assert agg.navigation == pytest.approx(nav) and agg.social == pytest.approx(soc)
    assert agg.score == pytest.approx(100 * nav * (0.7 + 0.3 * soc))
    assert challenge_score(1.0, 0.0, 0.0, 0.0)[2] == pytest.approx(100.0)
    assert aggregate([a, b], cr_denominator=682).cr == pytest.approx(1 / 682)
    with pytest.raises(ValueError):
        aggregate([])


def test_reference_cma_score():
    """The organisers' reference CMA figures give a Score in the expected range."""
    nav, soc, score = challenge_score(0.129, 6.387, 0.684, 17.536)
    assert nav == pytest.approx(0.8 * 0.129 + 0.2 * 3 / 9.387)
    assert 0 < score < 20


def test_challenge_baseline_file(havln_data, tmp_path):
    b = load_collision_baseline(havln_data / "challenge" / "collision_num_val_seen.json")
    assert len(b) == 778 and set(b) == {str(i) for i in range(1, 779)} and all(v >= 0 for v in b.values())
    bad = tmp_path / "b.json"
    bad.write_text('{"1": -2}')
    with pytest.raises(ValueError, match="value of '1'"):
        load_collision_baseline(bad)
