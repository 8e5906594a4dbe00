"""Where a task comes from.

Takes a YAML spec file or a GitHub event (issue, `/codegen` comment, review comment, submitted
review, failed workflow run, dispatch, schedule) and returns an `EventTask` (or `Ignore`): the
task text with others' words fenced as data, the actor to check, and the settings blocks left
unparsed until that actor's permission is known. Sources never run anything.
"""
