"""Where a task comes from: a GitHub event (issue, `/codegen` comment, review comment, submitted
review, failed workflow run, dispatch, schedule) -> an `EventTask` (or a `Skip`) -> the Spec the
pipeline runs. Sources never run anything.

- `events`: the payload -> `EventTask` or `Skip`, deciding only what the payload settles;
- `markdown`: triggers and fenced blocks, read as GitHub renders them;
- `settings_blocks`: an issue's or comment's settings blocks, parsed only after `authorize`;
- `authorize`: whether the actor (and whoever re-ran the job) may start a run;
- `pull_tasks`: a review's or a failed CI run's full task, from what the API returns;
- `task_spec`: the task, the default branch's `.codegen.yml` and the inputs -> the Spec.

Others' words reach the model fenced as data.
"""
