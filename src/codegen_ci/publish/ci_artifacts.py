"""What a failed workflow run left behind, through the REST API: the JUnit files in its
artifacts (each artifact a zip), else the tails of its failed jobs' logs.

Artifacts are written by the code under test: members are read by name into a directory of
ours (never extracted along their own paths), as a stream, and every size is capped: each
download, each member, the number of members looked at and of reports taken, and the bytes
written over the whole run.
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from codegen_ci.gate.junit.parse import parse_files
from codegen_ci.publish.forge import Forge
from codegen_ci.security import guarded_write
from codegen_ci.security.guarded_read import Refused
from codegen_ci.security.untrusted import Untrusted, strip_ansi

MAX_ZIP_BYTES = 100 * 1024 * 1024
MAX_XML_BYTES = 20 * 1024 * 1024  # one member
MAX_TOTAL_XML_BYTES = 64 * 1024 * 1024  # every member of every artifact of a run, together
MAX_MEMBERS = 200  # members looked at, per artifact (a zip may list millions)
MAX_XML_FILES = 50  # reports taken, per run
MAX_LOG_BYTES = 20 * 1024 * 1024
MAX_ARTIFACTS = 20
MAX_JOBS = 3
TAIL_LINES = 60
TAIL_CHARS = 6000


@dataclass
class RunLeftovers:
    # (test id, message) and (job name, log tail): the messages and logs the code under test
    # printed reach the model only fenced
    tests: list[tuple[Untrusted, Untrusted]] = field(default_factory=list)
    logs: list[tuple[Untrusted, Untrusted]] = field(default_factory=list)
    junit_files: list[str] = field(default_factory=list)


def failed_run_leftovers(gh: Forge, run_id: int, workdir: Path) -> RunLeftovers:
    found = RunLeftovers()
    artifacts = gh.run_artifacts(run_id)
    workdir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    budget = _Budget()
    for artifact in [a for a in artifacts if not a.get("expired")][:MAX_ARTIFACTS]:
        data = gh.artifact_zip(artifact, MAX_ZIP_BYTES)
        paths += _junit_members(data, workdir, f"{artifact['id']}", budget)
    result = parse_files(paths)
    found.junit_files = [p.name for p in paths]
    found.tests = [(f.id, f.message) for f in result.failures()]
    if found.tests:
        return found
    jobs = gh.run_jobs(run_id)
    for job in [j for j in jobs if j.get("conclusion") == "failure"][:MAX_JOBS]:
        log = gh.job_log(job, MAX_LOG_BYTES)
        name = Untrusted(str(job.get("name") or job["id"]))  # the workflow file's words
        found.logs.append((name, Untrusted(_tail(log))))
    return found


@dataclass
class _Budget:
    """What is left to write, over every artifact of one run."""

    files: int = MAX_XML_FILES
    bytes: int = MAX_TOTAL_XML_BYTES


def _junit_members(data: bytes, workdir: Path, prefix: str, budget: _Budget) -> list[Path]:
    """The `.xml` members of one artifact, written as `<prefix>-<n>-<name>` in `workdir`.
    Bounded by member count, per member and in total by the bytes actually decompressed (the
    sizes a zip declares are the attacker's word), read as a stream."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()[:MAX_MEMBERS]
    except (zipfile.BadZipFile, OSError, ValueError):
        return []
    paths = []
    for n, info in enumerate(infos):
        name = PurePosixPath(info.filename).name
        if info.is_dir() or not name.endswith(".xml") or info.file_size > MAX_XML_BYTES:
            continue
        if budget.files <= 0 or info.file_size > budget.bytes:
            break
        path = workdir / f"{prefix}-{n}-{name}"
        try:
            written = _extract(archive, info, path, min(MAX_XML_BYTES, budget.bytes))
        except Refused:
            continue  # a link or special file planted at the name: left as it is, not read
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
            path.unlink(missing_ok=True)
            continue
        budget.files -= 1
        budget.bytes -= written
        paths.append(path)
    return paths


def _extract(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path, limit: int) -> int:
    """Stream one member into `path`, at most `limit` bytes (a longer member is cut there and
    then fails to parse, as a truncated report should)."""
    written = 0
    # the member's name is the artifact's: a link or a FIFO at that name is never opened
    with archive.open(info) as member, guarded_write.create(path) as out:
        while written < limit:
            chunk = member.read(min(1 << 16, limit - written))
            if not chunk:
                break
            view = memoryview(chunk)
            while view:
                view = view[os.write(out, view) :]
            written += len(chunk)
    return written


def _tail(log: bytes) -> str:
    lines = strip_ansi(log.decode("utf-8", errors="replace")).splitlines()
    return "\n".join(lines[-TAIL_LINES:])[-TAIL_CHARS:]
