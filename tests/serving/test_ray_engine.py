"""``levy rank --engine ray``: the same scores as in this process, on a local Ray.

Ray is an optional extra (``pip install 'levy-core[ray]'``): without it these tests are
skipped locally, unless ``LEVY_REQUIRE_RAY=1`` (CI, which installs the extra), then they
fail. One local Ray is started for the module (about 10 s).
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from levy_core.cli.main import main
from levy_core.data import DataError, Observations
from levy_core.serving import chunked
from levy_core.serving.ray_engine import (
    RankScorer,
    add_bucket,
    model_bytes,
    rank_with_ray,
    require_ray,
)

RAY_WORKERS = 2


@pytest.fixture(scope="module")
def local_ray():
    if importlib.util.find_spec("ray") is None:
        if os.environ.get("LEVY_REQUIRE_RAY") == "1":
            pytest.fail("LEVY_REQUIRE_RAY=1 but ray is not installed (pip install -e '.[test,ray]')")
        pytest.skip("ray is not installed (pip install 'levy-core[ray]')")
    import ray

    ray.init(address="local", num_cpus=RAY_WORKERS + 1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def series_parquet(synthetic_obs: Observations, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 40 synthetic series, shuffled (Ray needs no order) in 8 row groups."""
    path = tmp_path_factory.mktemp("ray") / "series.parquet"
    synthetic_obs.frame.sample(frac=1.0, random_state=1).to_parquet(path, row_group_size=600, index=False)
    return path


@pytest.mark.slow  # a local Ray cluster
def test_ray_scores_equal_in_process_scores(local_ray, fitted, fitted_dir: Path, series_parquet: Path,
                                            tmp_path: Path) -> None:
    # in this process the rows must come grouped by series: the same rows, sorted
    grouped = tmp_path / "grouped.parquet"
    pd.read_parquet(series_parquet).sort_values("series_id", kind="stable").to_parquet(grouped, index=False)
    chunked.rank_file(fitted, grouped, tmp_path / "local.csv", chunk_series=7)
    n, seconds = rank_with_ray(fitted_dir, series_parquet, tmp_path / "ray.parquet", workers=RAY_WORKERS)
    local = pd.read_csv(tmp_path / "local.csv", dtype={"series_id": str})
    on_ray = pd.read_parquet(tmp_path / "ray.parquet")
    assert n == len(on_ray) == len(local) == 40 and seconds > 0
    assert list(on_ray.columns) == list(local.columns)
    assert on_ray["series_id"].tolist() == local["series_id"].tolist()
    assert on_ray["rank"].tolist() == list(range(1, 41))
    for column in ["trust_score", "mean_sigma", "mean_log_evidence", "mean_n_eff", "mean_disagreement"]:
        np.testing.assert_allclose(on_ray[column], local[column], rtol=0, atol=1e-5, err_msg=column)
    assert (on_ray["n_queries"].to_numpy() == local["n_queries"].to_numpy()).all()


@pytest.mark.slow  # a local Ray cluster
def test_levy_rank_engine_ray_on_the_command_line(local_ray, fitted_dir: Path, series_parquet: Path,
                                                  tmp_path: Path, capsys) -> None:
    out = tmp_path / "rank.csv"
    assert main(["rank", str(fitted_dir), str(series_parquet), "--out", str(out), "--engine", "ray",
                 "--workers", str(RAY_WORKERS)]) == 0
    assert "scored 40 series in" in capsys.readouterr().out
    assert pd.read_csv(out)["rank"].tolist() == list(range(1, 41))


@pytest.mark.slow  # a local Ray cluster
def test_a_bad_bucket_is_refused_with_the_data_message(local_ray, fitted_dir: Path, series_parquet: Path,
                                                       tmp_path: Path) -> None:
    bad = pd.read_parquet(series_parquet)
    bad.loc[bad.index[5], "value"] = np.inf
    bad.to_parquet(tmp_path / "bad.parquet", index=False)
    with pytest.raises(DataError, match="not finite numbers"):
        rank_with_ray(fitted_dir, tmp_path / "bad.parquet", tmp_path / "r.csv", workers=1)


def test_the_actor_loads_the_model_from_bytes_and_scores_a_bucket(fitted, fitted_dir: Path,
                                                                  synthetic_obs: Observations) -> None:
    pytest.importorskip("ray")
    rows = add_bucket(synthetic_obs.frame.iloc[::-1].reset_index(drop=True), "series_id", 3)
    assert set(rows["__levy_bucket"]) <= {0, 1, 2}
    assert (add_bucket(rows, "series_id", 3)["__levy_bucket"] == rows["__levy_bucket"]).all()  # stable
    scorer = RankScorer(model_bytes(fitted_dir), synthetic_obs.report.mapping, "hours")
    scores = scorer(rows[rows["__levy_bucket"] == 1])
    assert scores["series_id"].nunique() == len(scores) > 0
    assert set(scores["series_id"]) == set(rows.loc[rows["__levy_bucket"] == 1, "series_id"])


def test_without_ray_the_message_says_how_to_install_it(monkeypatch, fitted_dir: Path, series_parquet: Path,
                                                        tmp_path: Path, capsys) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    with pytest.raises(ValueError, match=r"pip install 'levy-core\[ray\]'"):
        require_ray()
    assert main(["rank", str(fitted_dir), str(series_parquet), "--out", str(tmp_path / "r.csv"),
                 "--engine", "ray"]) == 2
    assert "pip install 'levy-core[ray]'" in capsys.readouterr().err


@pytest.mark.slow  # a local Ray cluster
def test_ray_reads_parquet_only(local_ray, fitted_dir: Path, tmp_path: Path) -> None:
    csv = tmp_path / "d.csv"
    csv.write_text("series_id,time,value\na,0,1\na,1,2\n")
    with pytest.raises(DataError, match="--engine ray reads Parquet"):
        rank_with_ray(fitted_dir, csv, tmp_path / "r.csv")


# --- issue 27: a local Ray listens on the loopback interface only, in a private folder ---

def _require_ray() -> None:
    if importlib.util.find_spec("ray") is None:
        if os.environ.get("LEVY_REQUIRE_RAY") == "1":
            pytest.fail("LEVY_REQUIRE_RAY=1 but ray is not installed (pip install -e '.[test,ray]')")
        pytest.skip("ray is not installed (pip install 'levy-core[ray]')")


def _listening(table: str) -> dict[int, ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Socket inode → local address of every listening TCP socket in /proc/net/tcp{,6}."""
    out: dict[int, ipaddress.IPv4Address | ipaddress.IPv6Address] = {}
    try:
        lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
    except OSError:
        return out
    for line in lines:
        fields = line.split()
        if fields[3] != "0A":  # TCP_LISTEN
            continue
        raw = bytes.fromhex(fields[1].split(":")[0])  # 32-bit words in the host's (little-endian) order
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
        out[int(fields[9])] = ipaddress.ip_address(raw)
    return out


def _loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _descendants(root: int) -> set[int]:
    """``root`` and every process whose parent chain leads to it."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    tree, grew = {root}, True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return tree


def _sockets_of(pids: set[int]) -> set[int]:
    inodes: set[int] = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
        except OSError:
            continue
    return inodes


@pytest.mark.slow  # starts `levy rank --engine ray`: a Ray cluster
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net/tcp")
def test_a_local_ray_listens_on_loopback_only_and_leaves_no_folder(fitted_dir: Path, series_parquet: Path,
                                                                    tmp_path: Path) -> None:
    """``levy rank --engine ray`` in a fresh process: while it runs, every listening socket of
    its process tree (driver, gcs_server, raylet, workers, agents) is on 127.0.0.1 (or
    ::ffff:127.0.0.1, ::1); afterwards its private temporary folder is gone."""
    import contextlib
    import subprocess
    import time

    _require_ray()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "levy_core", "rank", str(fitted_dir), str(series_parquet),
                             "--out", str(tmp_path / "r.csv"), "--engine", "ray", "--workers", "1", "--quiet"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: dict[int, ipaddress.IPv4Address | ipaddress.IPv6Address] = {}
    folders: dict[str, int] = {}  # the private folder (from the GCS's --log_dir) → its mode
    try:
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            tree = _descendants(proc.pid)
            inodes = _sockets_of(tree)
            for table in ("tcp", "tcp6"):
                seen.update({i: a for i, a in _listening(table).items() if i in inodes})
            for pid in tree:
                try:
                    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                for arg in args:
                    if arg.startswith(b"--log_dir=") and b"/levy-ray-" in arg:
                        path = arg.decode()[len("--log_dir="):]
                        folder = path[:path.index("/", path.index("/levy-ray-") + 1)]
                        with contextlib.suppress(OSError):
                            folders[folder] = os.stat(folder).st_mode & 0o777
            time.sleep(0.2)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "scored 40 series" in out
    assert len(seen) >= 3, seen  # the GCS, the raylet and a worker at least were caught listening
    exposed = sorted(str(a) for a in seen.values() if not _loopback(a))
    assert not exposed, f"listening beyond the loopback interface: {exposed}"
    assert len(folders) == 1 and set(folders.values()) == {0o700}, folders
    assert not Path(next(iter(folders))).exists(), "the private Ray folder was left behind"


def test_too_many_workers_for_this_machine_are_refused(fitted_dir: Path, series_parquet: Path) -> None:
    _require_ray()
    with pytest.raises(ValueError, match=r"--workers 1000 is more than the \d+ cores of (this machine|the Ray)"):
        rank_with_ray(fitted_dir, series_parquet, series_parquet.parent / "r.csv", workers=1000)


@pytest.mark.parametrize(("address", "says"), [("127.0.0.1:1", "no Ray cluster reachable there within 15 s"),
                                                ("ray://127.0.0.1:1", "no Ray cluster reachable there")])
def test_an_unreachable_address_fails_within_the_timeout(fitted_dir: Path, series_parquet: Path, tmp_path: Path,
                                                         capsys, address: str, says: str) -> None:
    import time

    _require_ray()
    t0 = time.monotonic()
    assert main(["rank", str(fitted_dir), str(series_parquet), "--out", str(tmp_path / "r.csv"), "--engine", "ray",
                 "--address", address]) == 2
    assert time.monotonic() - t0 < 15 + 10  # CONNECT_TIMEOUT_S and the model's check
    err = capsys.readouterr().err
    assert err.startswith("error: ") and says in err and "Traceback" not in err


def test_an_address_where_no_grpc_server_answers_is_refused(tmp_path: Path) -> None:
    """Something listens, but it is not Ray: refused at once instead of Ray's minutes of retries."""
    import socket
    import threading

    from levy_core.serving.ray_engine import check_address

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(64)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    with pytest.raises(ValueError, match="not a Ray cluster"):
        check_address(f"127.0.0.1:{server.getsockname()[1]}", timeout=5)
    server.close()
