"""Test doubles shipped for users' own tests (a public module).

`scripted_model.ScriptedModelServer`: an OpenAI-compatible chat-completions server on loopback
that answers from a script and records every request (optionally reporting usage as a caching
provider does). `github_double.GitHubDouble`: a GitHub REST double over real HTTP that PyGithub
talks to. Both take nothing but their script or seed data and return real HTTP answers.
`deterministic_model.DeterministicModel`: the `Model` Protocol answered in-process from a list
of replies, every request recorded (no server, nothing patched). The tool itself never imports
this package.
"""
