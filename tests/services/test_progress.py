"""The estimate of the time left and the words of a progress report."""

from __future__ import annotations

import pytest

from vrvm.services.display.progress import (
    TimeLeft,
    describe_progress,
    describe_step,
    format_seconds,
)


def test_no_estimate_before_the_first_step_of_a_phase():
    clock = TimeLeft()
    assert clock.update(0, 8, 1.5, "members") is None
    assert clock.phase == "members" and clock.phase_started_s == 1.5


def test_remaining_is_the_phase_pace_times_the_steps_left():
    clock = TimeLeft()
    clock.update(0, 8, 2.0, "members")
    assert clock.update(2, 8, 12.0, "members") == pytest.approx(30.0)  # 5 s a member
    assert clock.update(4, 8, 32.0, "members") == pytest.approx(30.0)  # 7.5 s a member
    assert clock.update(8, 8, 62.0, "members") == 0.0


def test_a_phase_without_a_zero_report_starts_where_the_last_one_ended():
    clock = TimeLeft()
    clock.update(10, 10, 20.0, "reading")
    assert clock.update(1, 4, 26.0, "members") == pytest.approx(18.0)  # 6 s, 3 left
    assert clock.phase_started_s == 20.0
    first = TimeLeft()  # the first phase starts at 0 s
    assert first.update(1, 3, 4.0, "reading") == pytest.approx(8.0)


def test_each_phase_counts_its_own_steps():
    clock = TimeLeft()
    for done in range(1, 5):
        clock.update(done, 4, 10.0 * done, "reading")
    clock.update(1, 2, 140.0, "members")  # 100 s for the first of two members
    assert clock.remaining_s(1, 2, 140.0) == pytest.approx(100.0)
    assert clock.update(1, 4, 141.0, "statistics") == pytest.approx(3.0)


def test_unknown_totals_give_no_estimate():
    clock = TimeLeft()
    assert clock.update(1000, 0, 3.0, "queries") is None


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (0.04, "0.0 s"),
        (3.25, "3.2 s"),
        (9.96, "10 s"),
        (41.4, "41 s"),
        (60, "1 min"),
        (200, "3 min 20 s"),
        (3599.6, "1 h 00 min"),
        (7500, "2 h 05 min"),
        (float("inf"), "unknown"),
    ],
)
def test_durations_are_said_as_people_say_them(seconds, said):
    assert format_seconds(seconds) == said


def test_the_words_of_a_report():
    assert describe_step(3, 8, "members") == "member 3 of 8 trained"
    assert describe_step(2, 10, "reading") == "part 2 of 10 read"
    assert describe_step(4, 10, "statistics") == "part 4 of 10 summed"
    assert describe_step(65536, 1_000_000, "queries") == "65,536 of 1,000,000 queries predicted"
    assert describe_step(1, 2, "") == "1 of 2 done"
    assert describe_progress(41.0, 55.2) == "41 s, about 55 s left"
    assert describe_progress(41.0, None) == "41 s"
    assert describe_progress(41.0, 0.0) == "41 s"


def test_say_is_what_the_dashboard_shows():
    clock = TimeLeft()
    assert clock.say(0, 2, 0.5, "members") == "Member 0 of 2 trained (0.5 s)"
    assert clock.say(1, 2, 10.5, "members") == "Member 1 of 2 trained (10 s, about 10 s left)"
    assert (
        clock.say(2, 2, 20.5, "members", what="Full retrain")
        == "Full retrain: member 2 of 2 trained (20 s)"
    )
