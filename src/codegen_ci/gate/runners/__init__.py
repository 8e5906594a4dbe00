"""Per-runner support for the gate: the pytest plugin that runs the previously
failing tests first (loaded only inside the repository's own pytest process, never imported
with pytest by the tool), and pytest node-id handling.
"""
