"""What a failed workflow run left behind, through the REST API: the JUnit files in its
artifacts (each artifact a zip), else the tails of its failed jobs' logs.

Artifacts are written by the code under test: members are read by name into a directory of
ours (never extracted along their own paths), and every size is capped.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from codegen_ci.gate.junit.parse import parse_files
from codegen_ci.publish.github import GitHubPublisher
from codegen_ci.publish.github_rest import download, rest_list
from codegen_ci.security.output_normalise import strip_ansi

MAX_ZIP_BYTES = 100 * 1024 * 1024
MAX_XML_BYTES = 20 * 1024 * 1024
MAX_LOG_BYTES = 20 * 1024 * 1024
MAX_ARTIFACTS = 20
MAX_JOBS = 3
TAIL_LINES = 60
TAIL_CHARS = 6000


@dataclass
class RunLeftovers:
    tests: list[tuple[str, str]] = field(default_factory=list)  # (test id, message)
    logs: list[tuple[str, str]] = field(default_factory=list)  # (job name, log tail)
    junit_files: list[str] = field(default_factory=list)


def failed_run_leftovers(gh: GitHubPublisher, run_id: int, workdir: Path) -> RunLeftovers:
    repo = gh.target.repository
    found = RunLeftovers()
    artifacts = rest_list(
        gh,
        f"listing the artifacts of run {run_id}",
        f"/repos/{repo}/actions/runs/{run_id}/artifacts",
        key="artifacts",
    )
    workdir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for artifact in [a for a in artifacts if not a.get("expired")][:MAX_ARTIFACTS]:
        data = download(
            gh,
            f"downloading artifact {artifact.get('name')}",
            f"/repos/{repo}/actions/artifacts/{artifact['id']}/zip",
            MAX_ZIP_BYTES,
        )
        paths += _junit_members(data, workdir, f"{artifact['id']}")
    result = parse_files(paths)
    found.junit_files = [p.name for p in paths]
    found.tests = [(f.id, f.message or "") for f in result.failures()]
    if found.tests:
        return found
    jobs = rest_list(
        gh,
        f"listing the jobs of run {run_id}",
        f"/repos/{repo}/actions/runs/{run_id}/jobs",
        key="jobs",
    )
    for job in [j for j in jobs if j.get("conclusion") == "failure"][:MAX_JOBS]:
        log = download(
            gh,
            f"downloading the log of job {job.get('name')}",
            f"/repos/{repo}/actions/jobs/{job['id']}/logs",
            MAX_LOG_BYTES,
        )
        found.logs.append((str(job.get("name") or job["id"]), _tail(log)))
    return found


def _junit_members(data: bytes, workdir: Path, prefix: str) -> list[Path]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        return []
    paths = []
    for n, info in enumerate(archive.infolist()):
        name = PurePosixPath(info.filename).name
        if info.is_dir() or not name.endswith(".xml") or info.file_size > MAX_XML_BYTES:
            continue
        path = workdir / f"{prefix}-{n}-{name}"
        with archive.open(info) as member:
            path.write_bytes(member.read(MAX_XML_BYTES))
        paths.append(path)
    return paths


def _tail(log: bytes) -> str:
    lines = strip_ansi(log.decode("utf-8", errors="replace")).splitlines()
    return "\n".join(lines[-TAIL_LINES:])[-TAIL_CHARS:]
