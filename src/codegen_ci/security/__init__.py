"""What keeps secrets and untrusted text in their place: one redactor (`redact`), the scrubbed
environment for commands and re-execution without secrets (`safe_env`), untrusted text as
data for the model (`untrusted`) and inert for a terminal or a commit message
(`inert_text`), the guarded reader for what confined code could have shaped
(`guarded_read`), and the sandbox every repository or model command runs in (`sandbox`, with
its backends `bwrap` and `landlock`, whose launcher is `landlock_exec`).

Takes text or an environment; returns it cleaned, or the argv prefix that confines a
command. Leaf modules: they import nothing above.
"""
