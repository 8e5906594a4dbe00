"""What the world sees of a run.

Takes a `Report` and the run's branch; returns a `Published` record after pushing the branch,
opening or updating the pull request, replying in review threads, editing the one status
comment, and writing the Actions outputs and job summary. Everything posted is redacted and
neutralised. The only package that imports PyGithub.
"""
