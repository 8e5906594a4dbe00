"""What keeps secrets and untrusted text in their place: one redactor, the scrubbed
environment for commands, re-execution without secrets, and untrusted text as data.

Takes text or an environment; returns it cleaned. Leaf modules: they import nothing above.
"""
