"""The suite's longest tests start first, one worker each (a pytest plugin, registered by tests/conftest.py).

pytest-xdist's `--dist worksteal` (pyproject.toml's addopts) hands each of its N workers a contiguous slice of the
collection (sizes len//N, then the rest's len//(N-1), ...) and later lets an idle worker take the tail half of the
busiest one's queue: a test at the head of a slice stays where it is and starts at once, one at the tail runs
last. Alphabetically the suite ended with one worker still in a two-minute test after the others had finished;
here the tests of `LONGEST` go, longest first, each to the head of the slice with the least of them so far (the
longest-processing-time rule; the Ray tests together, see `ONE_WORKER`), and every other test keeps its place in the
collection's order behind them, so the tail the workers steal from is short tests only. Without xdist, or under
another `--dist`, the order is left as collected.
"""

from __future__ import annotations

import pytest

LONGEST = {
    # Seconds of wall, setup and call, in the full suite (branch `suite` at 80c02eb's tests, 2026-11-29 16:55 UTC,
    # `--durations=30`, 187.75 s in all, load 3-9 with other work on the 2-core machine). Only their order matters,
    # roughly; a test not listed counts as short.
    "tests/raydata/test_ray_runs.py::test_sigkill_halfway_then_resume_loses_nothing_and_resends_little": 79,
    "tests/independent/test_study_independent.py::test_a_conversation_study_composes_against_the_independent_"
    "server": 21,
    "tests/e2e/test_budget_sweep.py::test_a_conversation_run_held_by_the_budget_lets_the_canary_jobs_in_flight_be_"
    "collected": 20,
    "tests/independent/test_judge_card_independent.py::test_the_judge_card_resends_rewords_and_keeps_failing_"
    "judges_out_of_the_headline": 13,
    "tests/e2e/test_spec_health_walkthrough.py::test_the_spec_health_walkthrough_runs_verbatim_and_shows_what_the_"
    "page_quotes": 12,
    "tests/analysis/test_coverage_matrix.py::test_every_estimator_covers_on_its_edge_grid_at_low_draws[ppi]": 12,
    "tests/study_matrix/test_study_matrix.py::test_a_fixed_sample_configuration_holds_every_invariant": 10,
    "tests/e2e/test_realtime_cli.py::test_sigkill_half_way_then_resume_sends_nothing_final_again_and_loses_nothing": 10,
    "tests/conversations/test_judging_conversations.py::test_the_shipped_sycobench_example_and_the_docs_block_run_"
    "offline": 10,
    "tests/raydata/test_ray_runs.py::test_every_answer_on_its_own_input_and_failures_typed": 9,
    "tests/experiments/test_interrupt.py::test_ctrl_c_records_interrupted_and_the_next_run_resumes": 8,
    "tests/conversations/test_simulated_user.py::test_sigkill_in_the_user_half_of_round_two_then_resume_makes_at_"
    "most_one_job_more[regulator]": 8,
    "tests/interop/test_inspect_view.py::test_a_conversation_is_one_sample_scored_per_judge_and_per_turn_every_"
    "score_finite": 8,
    "tests/analysis/test_published_table.py::test_report_over_the_originals_folders_reproduces_its_published_table": 8,
    "tests/experiments/test_auto_rounds.py::test_round_one_goes_as_a_batch_job_round_two_at_flex_and_a_kill_in_"
    "round_two_resends_no_answer": 8,
    "tests/realtime/test_rate_control.py::test_rpm_just_under_the_limit_gets_under_2_percent_429s_and_every_"
    "result_right": 8,
    "tests/library/test_readme_library.py::test_the_readme_library_chain_runs_verbatim_offline": 8,
    "tests/raydata/test_ray_judge.py::test_ray_judge_puts_every_verdict_on_its_own_answer": 8,
    "tests/conversations/test_simulated_user.py::test_sigkill_in_the_user_half_of_round_two_then_resume_makes_at_"
    "most_one_job_more[auditor]": 8,
    "tests/study_matrix/test_study_matrix.py::test_a_late_clock_replans_every_run_and_a_budget_raised_after_the_"
    "deadline_goes_on": 8,
    "tests/e2e/test_crash.py::test_sigkill_at_random_moments_then_resume": 7,
    "tests/independent/test_study_independent.py::test_a_tight_budget_ends_then_finishes_paying_nothing_twice_"
    "against_the_independent_server": 7,
    "tests/experiments/test_judge_tiers.py::test_a_started_study_goes_on_from_the_plan_it_started_with_not_a_plan_"
    "made_afresh_from_what_its_jobs_took": 7,
    "tests/raydata/test_ray_experiment.py::test_a_ray_candidate_in_an_experiment_answers_every_input_and_a_rerun_"
    "sends_nothing": 7,
    "tests/experiments/test_judge_tiers.py::test_a_judge_killed_with_its_batch_job_in_flight_is_collected_on_a_"
    "late_rerun_never_sent_again": 6,
    "tests/experiments/test_pipelined.py::test_a_fast_candidate_is_judged_while_the_slow_one_still_generates": 6,
    "tests/independent/test_health_independent.py::test_statement_health_recomputes_from_the_verdict_files_and_"
    "flags_the_planted_statements": 6,
    "tests/analysis/test_experiment_statistics.py::test_rates_are_the_verdicts_the_judge_gave_per_variation_and_run": 6,
    "tests/experiments/test_dry_run.py::test_dry_run_writes_nothing_and_counts_what_the_run_sends": 6,
    "tests/experiments/test_endpoint_models.py::test_an_endpoint_judges_max_concurrency_holds_across_all_its_tasks": 6,
    # The inner loop's longest (`-m "not slow"` held none of the above, so it ran in collection order, and a worker
    # that met one of these late ended the run alone): setup and call, idle, main at 80c06cc (`--durations=20`), less
    # what was since taken out of them (their reports' figures: the shared interop experiment, the original export's
    # two studies; the golden report now built with its twin without figures, test_no_figures.py's first test).
    "tests/interop/test_inspect_export.py::test_inspect_reads_one_scored_sample_per_answer_with_each_judges_verdict"
    "[eval]": 6,
    "tests/library/test_own_provider.py::test_a_plugin_providers_jobs_are_cancelled_and_fetched_from_run_json": 5.2,
    "tests/ops/test_ops_cli.py::test_fetch_after_completion_writes_what_a_monitored_run_writes": 4.5,
    "tests/analysis/test_report_stream.py::test_the_figures_library_is_loaded_only_when_a_figure_is_drawn": 4.2,
    "tests/analysis/test_no_figures.py::test_every_table_and_the_summary_are_the_same_without_figures": 3.6,
    "tests/interop/test_original_export.py::test_each_epoch_goes_into_its_own_run_folder_and_all_pairs_counts_"
    "every_comparison": 3.5,
    "tests/ops/test_ops_cli.py::test_cancel_reaches_the_server_and_cancelled_requests_are_final": 3.4,
    "tests/providers/test_gemini_batch.py::test_cancel_ends_the_job_without_results": 3.1,
    "tests/interop/test_original_export.py::test_likert_verdicts_are_filed_as_the_original_files_ratings": 2.8,
    "tests/conversations/test_auditor.py::test_the_shipped_auditor_config_runs_offline": 2.7,
    "tests/emulator/test_openai.py::test_progress_is_visible_while_running": 2.4,
    "tests/unit/test_layers.py::test_every_unit_has_a_place_in_the_layers": 2.4,
    "tests/analysis/test_coverage.py::test_category_truth_is_the_share_of_many_draws": 2.3,
}
"""The longest tests by node id, with their seconds (see above)."""


def slices(count: int, workers: int) -> list[int]:
    """The sizes of the slices worksteal first hands `workers` idle workers of `count` tests, in order."""
    sizes: list[int] = []
    for i in range(workers):
        sizes.append((count - sum(sizes)) // (workers - i))
    return sizes


ONE_WORKER = ("tests/raydata/",)
"""Folders whose tests run on one worker, one after another, as one unit of the layout: the Ray tests' commands join
one shared cluster of two CPUs (tests/raydata/shared_ray.py), and three of them spread over three workers waited on
each other's Ray Data jobs for their CPUs past their 240 s deadline (loaded machine, 2026-11-29)."""


def _unit(nodeid: str) -> str | None:
    """The unit a test is laid out with: its `ONE_WORKER` folder, itself if listed in `LONGEST`, else none."""
    return next((folder for folder in ONE_WORKER if nodeid.startswith(folder)), nodeid if nodeid in LONGEST else None)


def layout(items: list[pytest.Item], workers: int) -> list[pytest.Item]:
    """`items` reordered so each unit (a listed test, or a `ONE_WORKER` folder's tests, listed ones first) heads a
    worker's slice, longest unit first to the least loaded slice with room (see the module docstring)."""
    sizes = slices(len(items), workers)
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        unit = _unit(item.nodeid)
        if unit is not None:
            units.setdefault(unit, []).append(item)
    for members in units.values():
        members.sort(key=lambda item: -LONGEST.get(item.nodeid, 0))  # stable: unlisted in collection order
    seconds = {unit: sum(LONGEST.get(item.nodeid, 0) for item in members) for unit, members in units.items()}
    queues: list[list[pytest.Item]] = [[] for _ in sizes]
    loads = [0.0] * workers
    for unit in sorted(units, key=lambda unit: -seconds[unit]):
        room = [w for w in range(workers) if len(queues[w]) + len(units[unit]) <= sizes[w]]
        worker = min(room or range(workers), key=lambda w: (loads[w], len(queues[w])))
        queues[worker].extend(units[unit])
        loads[worker] += seconds[unit]
    rest = iter(item for item in items if _unit(item.nodeid) is None)
    for queue, size in zip(queues, sizes, strict=True):
        queue.extend(next(rest) for _ in range(max(0, size - len(queue))))
    queues[-1].extend(rest)  # (only if a unit overfilled a slice: the counts still add up)
    return [item for queue in queues for item in queue]


DIST = "longest_first_dist"
"""The key of the controller's `--dist` in a worker's `workerinput` (xdist sets a worker's own `--dist` to "no")."""


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook, in the process that starts the workers
def pytest_configure_node(node: object) -> None:
    node.workerinput[DIST] = node.config.getoption("dist")  # type: ignore[attr-defined]


@pytest.hookimpl(trylast=True)  # after the other hooks have marked, ordered and deselected: the final list
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a worksteal worker (every worker collects, and all must order alike), the layout above."""
    worker = getattr(config, "workerinput", None)
    if worker is not None and worker.get(DIST) == "worksteal":
        items[:] = layout(items, int(worker["workercount"]))
