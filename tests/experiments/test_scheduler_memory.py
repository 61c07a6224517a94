"""The scheduler lets go of a task's pipeline once the task has ended: an experiment of many runs holds the
pipelines of the tasks running, not of every task it ran."""

from __future__ import annotations

import gc
import weakref

from speceval.experiments.scheduler import EngineRuns, StageScheduler, StageTask, TaskState


class Pipeline:
    """Stands for what a task's closures hold (its spec, its candidates' answers)."""


def test_a_finished_tasks_pipeline_is_freed_before_the_experiment_ends() -> None:
    refs: list[weakref.ref[Pipeline]] = []
    seen_by_later: list[bool] = []

    def task(key: str, needs: tuple[str, ...]) -> StageTask:
        pipeline = Pipeline()
        refs.append(weakref.ref(pipeline))
        written: list[Pipeline] = []

        def start() -> EngineRuns:
            if needs:  # the tasks it needs have ended: their pipelines must be gone
                gc.collect()
                seen_by_later.append(refs[0]() is None)
            return []

        def finish(summaries: list) -> None:
            written.append(pipeline)  # what a real task does with its pipeline: write its outputs

        return StageTask(key, "generation", needs, start, finish)

    tasks = [task("first", ())]
    tasks.append(task("second", ("first",)))
    scheduler = StageScheduler(tasks, sleep=lambda seconds: None)
    del tasks
    assert scheduler.run()
    gc.collect()
    assert all(t.state is TaskState.FINISHED for t in scheduler.tasks.values())
    assert seen_by_later == [True]  # when "second" started, "first"'s pipeline was gone
    assert [ref() for ref in refs] == [None, None]
