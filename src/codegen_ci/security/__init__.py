"""What keeps secrets and untrusted text in their place: one redactor, the scrubbed
environment for commands, re-execution without secrets, untrusted text as data, and the
sandbox every repository or model command runs in (bubblewrap, or Landlock + seccomp).

Takes text or an environment; returns it cleaned, or the argv prefix that confines a
command. Leaf modules: they import nothing above.
"""
