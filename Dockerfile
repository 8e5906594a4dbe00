# syntax=docker/dockerfile:1
# The image behind action.yml (`runs.using: docker`). The runner builds it from this file at
# the ref a workflow pins, mounts the checkout at /github/workspace, makes that the working
# directory and passes every input as an INPUT_* environment variable.

# Pinned by version tag and by digest (python:3.11.11-slim-bookworm, multi-arch index digest as
# used by several public projects; it could not be re-checked against the registry from the
# machine this was written on). Bump both together, e.g. with Dependabot's docker ecosystem.
FROM python:3.11.11-slim-bookworm@sha256:081075da77b2b55c23c088251026fb69a7b2bf92471e491ff5fd75c192fd38e5 AS base

# Build stage: installs the package and its dependencies into a virtualenv that the runtime
# stage copies whole, so no build tooling or pip cache lands in the final image.
FROM base AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
WORKDIR /build
COPY pyproject.toml README.md ./
COPY src ./src
RUN python -m venv /opt/codegen-ci \
 && /opt/codegen-ci/bin/pip install --no-cache-dir .

FROM base AS runtime
LABEL org.opencontainers.image.title="codegen-ci" \
      org.opencontainers.image.description="Turn a task into a tested pull request: an LLM edits, the repository's own lint and tests decide." \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="MIT"

# git does the worktree, commit and push work. The workspace GitHub mounts belongs to the runner
# user (uid 1001), not to root in here, so git's ownership check would refuse it: trust all
# directories system-wide. The container is single-purpose and sees only that checkout.
# Confinement (SECURITY.md, docs/sandbox.md): under GitHub's own `docker run` (Docker's
# default seccomp and AppArmor profiles: no namespaces, so no bubblewrap, not even for root)
# codegen-ci confines every repository and model command with Landlock and a seccomp filter,
# which need no package, no user and no privilege (Docker's default seccomp profile allows the
# Landlock system calls since Docker 23.0, moby/moby#43199). The launcher also empties the
# capability bounding set, so the commands of root in here run with no capability.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && git config --system --add safe.directory '*'

# Only the `codegen-ci` script goes on PATH (a link into the virtualenv); `python` and `pip` stay
# the image's own, so a project's setup command installs into a Python that codegen-ci's
# dependencies do not crowd.
COPY --from=build /opt/codegen-ci /opt/codegen-ci
RUN ln -s /opt/codegen-ci/bin/codegen-ci /usr/local/bin/codegen-ci
ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

# No USER instruction, and no WORKDIR: GitHub's "Dockerfile support for GitHub Actions" says
# Docker actions must run as the default user (root) or they cannot write GITHUB_WORKSPACE, and
# that the runner sets the working directory to the mounted workspace itself.
ENTRYPOINT ["codegen-ci", "action"]
