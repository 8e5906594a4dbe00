"""A semaphore or shared memory the sandbox refused is the environment's failure, not the
code's: under Landlock (no mounts, so no /dev/shm of the command's own) Python's
multiprocessing cannot make a lock, and the test fails with an EACCES that names no path."""

from __future__ import annotations

from pathlib import Path

from codegen_ci.gate.environment_check import Places, find_problem
from codegen_ci.report import CommandResult, Failure, Round

# pytest 8's output for pytoolz/toolz's toolz/sandbox/tests/test_parallel.py::test_fold
# (multiprocessing.Pool) under codegen-ci's Landlock backend, Python 3.11 (shortened)
POOL_UNDER_LANDLOCK = """\
__________________________________ test_fold ___________________________________

>       with Pool() as pool:
             ^^^^^^

toolz/sandbox/tests/test_parallel.py:15:
/root/.pyenv/versions/3.11.7/lib/python3.11/multiprocessing/synchronize.py:169: in __init__
    SemLock.__init__(self, SEMAPHORE, 1, 1, ctx=ctx)
>               sl = self._semlock = _multiprocessing.SemLock(
                    kind, value, maxvalue, self._make_name(),
                    unlink_now)
E                   PermissionError: [Errno 13] Permission denied

/root/.pyenv/versions/3.11.7/lib/python3.11/multiprocessing/synchronize.py:57: PermissionError
FAILED toolz/sandbox/tests/test_parallel.py::test_fold - PermissionError: [Er...
1 failed, 281 passed
"""
FOLD = Failure(
    id="toolz.sandbox.tests.test_parallel::test_fold",
    message="PermissionError: [Errno 13] Permission denied",
)


def round_of(tmp: Path, log: str, failures: list[Failure], kind: str = "test") -> Round:
    path = tmp / f"{kind}.log"
    path.write_text(log)
    record = CommandResult(
        command="python -m pytest", kind=kind, exit_code=1, duration_s=1.0, output_path=str(path)
    )
    return Round(iteration=1, commands=[record], failures=failures)


def places(tmp: Path) -> Places:
    return Places(tmp / "tree", (".venv",), (tmp / "scratch",))


def test_a_semaphore_refused_is_the_environments_with_what_to_do(tmp_path: Path) -> None:
    problem = find_problem(round_of(tmp_path, POOL_UNDER_LANDLOCK, [FOLD]), places(tmp_path))

    assert problem is not None
    assert (problem.errno, problem.path) == ("EACCES (permission denied)", "/dev/shm")
    message = problem.message()
    assert "PermissionError: [Errno 13] Permission denied" in message
    assert "multiprocessing" in message and "bubblewrap" in message
    assert "CODEGEN_SANDBOX=off" in message and "not asked to fix it" in message


def test_the_same_error_without_shared_memory_in_the_output_is_the_codes(tmp_path: Path) -> None:
    """Control: an EACCES naming no path is not the environment's by itself."""
    log = POOL_UNDER_LANDLOCK.replace("SemLock", "Lock").replace("_multiprocessing.", "")
    assert find_problem(round_of(tmp_path, log, [FOLD]), places(tmp_path)) is None


def test_a_test_that_uses_multiprocessing_and_fails_on_its_own_file_is_the_codes(
    tmp_path: Path,
) -> None:
    """A permission error on a file of the repository, in a suite that also uses semaphores:
    the path says whose it is."""
    denied = "E   PermissionError: [Errno 13] Permission denied: 'data/out.txt'"
    log = POOL_UNDER_LANDLOCK.replace(
        "E                   PermissionError: [Errno 13] Permission denied", denied
    )
    failure = Failure(id="tests/test_io.py::test_write", message=denied)
    assert find_problem(round_of(tmp_path, log, [failure]), places(tmp_path)) is None


def test_a_lint_whose_process_pool_is_refused_is_left_to_the_base_commits_check(
    tmp_path: Path,
) -> None:
    """flake8's process pool under Landlock: the lint fails on the base commit as well, where a
    failing lint is the base's (reported, never the model's); only test commands are asked."""
    found = find_problem(round_of(tmp_path, POOL_UNDER_LANDLOCK, [], kind="lint"), places(tmp_path))
    assert found is None


# pytest 9's output for mahmoud/boltons' tests/test_socketutils.py::test_socketutils_netstring
# (a server on 127.0.0.1) under codegen-ci's Landlock backend, no network, Python 3.11
# (shortened): the socket() call itself is refused.
SERVER_UNDER_LANDLOCK = """\
__________________________ test_socketutils_netstring __________________________

    def test_socketutils_netstring():
        # Set up server
>       server_socket = socket.socket()
                        ^^^^^^^^^^^^^^^

tests/test_socketutils.py:278:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

self = <socket.socket fd=-1, family=0, type=0, proto=0>
family = <AddressFamily.AF_INET: 2>, type = <SocketKind.SOCK_STREAM: 1>
proto = 0, fileno = None

    def __init__(self, family=-1, type=-1, proto=-1, fileno=None):
        if fileno is None:
            if proto == -1:
                proto = 0
>       _socket.socket.__init__(self, family, type, proto, fileno)
E       PermissionError: [Errno 13] Permission denied

/root/.pyenv/versions/3.11.7/lib/python3.11/socket.py:232: PermissionError
FAILED tests/test_socketutils.py::test_socketutils_netstring - PermissionError: [Er...
1 failed, 624 passed
"""
NETSTRING = Failure(
    id="tests.test_socketutils::test_socketutils_netstring",
    message="PermissionError: [Errno 13] Permission denied",
)


def test_a_socket_landlock_refused_is_the_environments_with_what_to_do(tmp_path: Path) -> None:
    """boltons' own server on 127.0.0.1 under Landlock without the network: the right fix was
    'stuck' for three rounds on failures no change could mend. Now an environment error."""
    landlock = Places(tmp_path / "tree", (), (tmp_path / "scratch",), loopback="none")
    problem = find_problem(round_of(tmp_path, SERVER_UNDER_LANDLOCK, [NETSTRING]), landlock)

    assert problem is not None
    message = problem.message()
    assert "PermissionError: [Errno 13] Permission denied" in message
    assert "refused the command a socket" in message and "not asked to fix it" in message
    assert "bubblewrap" in message and "validation.network: [test]" in message
    # Node's and Go's words for the same refusal
    for line in (
        "Error: listen EACCES: permission denied 127.0.0.1:3000",
        "    server_test.go:12: listen tcp 127.0.0.1:0: socket: permission denied",
    ):
        log = SERVER_UNDER_LANDLOCK.replace(
            "E       PermissionError: [Errno 13] Permission denied", line
        )
        assert find_problem(round_of(tmp_path, log, [NETSTRING]), landlock) is not None, line


def test_a_refused_socket_is_the_codes_where_the_sandbox_gives_a_loopback(tmp_path: Path) -> None:
    """Controls: bubblewrap gives each command a loopback of its own (and no sandbox, the
    host's), so the same refusal there is the code's; and under Landlock a permission error on
    a file of the repository beside a socket call says whose it is by its path."""
    for loopback in ("own", None):
        own = Places(tmp_path / "tree", (), (tmp_path / "scratch",), loopback=loopback)
        assert find_problem(round_of(tmp_path, SERVER_UNDER_LANDLOCK, [NETSTRING]), own) is None
    landlock = Places(tmp_path / "tree", (), (tmp_path / "scratch",), loopback="none")
    denied = "E       PermissionError: [Errno 13] Permission denied: 'data/socket.cfg'"
    log = SERVER_UNDER_LANDLOCK.replace(
        "E       PermissionError: [Errno 13] Permission denied", denied
    )
    assert find_problem(round_of(tmp_path, log, [NETSTRING]), landlock) is None
