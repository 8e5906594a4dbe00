"""The ecosystems' fixtures (an npm install shared by the session, Go's caches), defined in
tests/helpers/eco_projects.py and named here for every test of this folder."""

from eco_projects import go_env, node_modules

__all__ = ["go_env", "node_modules"]
