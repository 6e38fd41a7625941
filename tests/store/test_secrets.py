"""A database password never shows: not in output, error messages, store.conf, manifests, the store or crash logs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from aoe_runner.cli import crashlog
from aoe_runner.cli.main import main
from aoe_runner.store import secrets
from aoe_runner.store.pg_index import PgIndex
from tests.store.conftest import SharedHome
from tests.store.pg_server import PASSWORD_ROLE, PgServer
from tests.tune.runner import Home, aoe_runner, tune

PASSWORD = "Tr0ub4dor-s3cret"


@pytest.fixture
def secret_url(pg_server: PgServer, pg_url: str) -> str:
    database = urlsplit(pg_url).path.lstrip("/")
    pg_server.sql(
        f"DO $$ BEGIN CREATE ROLE {PASSWORD_ROLE} LOGIN PASSWORD '{PASSWORD}'; EXCEPTION WHEN duplicate_object THEN NULL; END $$"
    )
    pg_server.sql(f"GRANT ALL ON SCHEMA public TO {PASSWORD_ROLE}", database)
    return pg_server.url(database, role=PASSWORD_ROLE, password=PASSWORD)


def everything_under(root: Path) -> str:
    return "".join(path.read_bytes().decode(errors="replace") for path in root.rglob("*") if path.is_file())


def test_a_wrong_password_fails_in_one_line_that_does_not_show_it(tmp_path: Path, secret_url: str) -> None:
    wrong = secret_url.replace(PASSWORD, "not-the-" + PASSWORD)
    done = aoe_runner(Home(tmp_path), "--store", wrong, "runs", "list")
    assert done.returncode == 4
    assert "password authentication failed" in done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    assert done.stderr.startswith(f"error: run store postgresql://{PASSWORD_ROLE}@/")


def test_store_init_tune_and_reading_never_write_or_print_the_password(tmp_path: Path, secret_url: str) -> None:
    home = Home(tmp_path)
    init = aoe_runner(home, "store", "init", secret_url)
    assert init.returncode == 0, init.stderr
    assert "the password was not written to store.conf: give it with PGPASSWORD or in ~/.pgpass" in init.stderr
    config = (tmp_path / "home" / "store.conf").read_text()
    assert PASSWORD not in config and f"url = postgresql://{PASSWORD_ROLE}@/" in config
    denied = aoe_runner(home, "runs", "list")  # store.conf has no password, and none is given
    assert denied.returncode == 4 and PASSWORD not in denied.stderr
    shared = SharedHome(tmp_path, secret_url)
    code, out, err = tune(shared, "progress", "--reports", "2", "--interval", "0.05")
    assert code == 0, err
    outputs = [out, err]
    for command in (("runs", "list"), ("runs", "show", "latest", "--json"), ("runs", "push"), ("bank", "best")):
        done = aoe_runner(shared, *command)
        assert done.returncode == 0, done.stderr
        outputs += [done.stdout, done.stderr]
    assert all(PASSWORD not in text for text in outputs)
    assert PASSWORD not in everything_under(tmp_path / "home")
    with psycopg.connect(secret_url) as db:
        stored = db.execute("SELECT string_agg(manifest::text || coalesce(artifacts, ''), '') FROM runs").fetchone()[0]
    assert stored and PASSWORD not in stored


def test_a_crash_with_the_url_in_its_message_keeps_the_password_out_of_the_log_and_stderr(
    secret_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], _fenced_home: Path
) -> None:
    def broken(self: PgIndex, where: object) -> None:
        raise RuntimeError(f"could not use {secret_url} (password={PASSWORD})")

    monkeypatch.setattr(PgIndex, "rows", broken)
    assert main(["--store", secret_url, "runs", "list"]) == 3
    err = capsys.readouterr().err
    (log,) = (_fenced_home / "crash-logs").iterdir()
    text = log.read_text()
    assert "RuntimeError: could not use postgresql://" in text and "--store" in text
    assert PASSWORD not in text and PASSWORD not in err


def test_scrub_hides_passwords_in_urls_conninfo_and_those_seen_before() -> None:
    secrets.remember("hunter2-xyz")
    text = "postgresql://me:pw@db/x host=db password='a b' user=me, then hunter2-xyz and password=plain"
    assert secrets.scrub(text) == "postgresql://me:***@db/x host=db password=*** user=me, then *** and password=***"
    assert crashlog is not None


def test_scrub_hides_a_password_holding_a_slash_or_hash_and_the_client_keys_passphrase() -> None:
    """libpq takes / and # in a password; the pattern stopped at /, and sslpassword= was not seen as a secret."""
    text = "postgresql://me:Zx/Qw9Secret@db/x postgresql://me:Ab#CdEf@db/y postgresql://me@db/z?sslpassword=Key1&a=b"
    assert secrets.scrub(text) == "postgresql://me:***@db/x postgresql://me:***@db/y postgresql://me@db/z?sslpassword=***&a=b"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("postgresql://me:Ab#CdEf@127.0.0.1:5432/aoe", "write '#' in the store URL as %23"),
        ("postgresql://me@[::1/aoe", "not a store URL aoe-runner can read: Invalid IPv6 URL"),
        ("postgresql://me@db/a\udcff", "not a store URL aoe-runner can read: it is not UTF-8 text"),
    ],
    ids=["hash", "unclosed IPv6", "not UTF-8"],
)
def test_a_store_url_that_cannot_be_read_safely_is_a_usage_error_that_shows_no_password(url: str, why: str) -> None:
    """store init with '#' in the password wrote 'postgresql://me:Ab' to store.conf and showed the rest; an unclosed
    [ and a byte that is not UTF-8 were exit 3."""
    from aoe_runner.errors import UsageError
    from aoe_runner.store.choice import check_url

    with pytest.raises(UsageError) as refused:
        check_url(url, "--store")

    assert why in str(refused.value) and "CdEf" not in str(refused.value)


def test_a_client_key_passphrase_is_not_written_and_is_refused_in_store_conf(tmp_path: Path) -> None:
    from aoe_runner.store.choice import without_password

    assert without_password("postgresql://me@db/aoe?sslpassword=Key1&sslmode=require") == "postgresql://me@db/aoe?sslmode=require"
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "store.conf").write_text("url = postgresql://me@db/aoe?sslpassword=Key1\n")
    done = aoe_runner(Home(tmp_path), "runs", "list")
    assert done.returncode == 2 and "store.conf: holds a password" in done.stderr and "Key1" not in done.stderr


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("ulr = postgresql://me:Key1@db/aoe", "line 2: 'ulr' is not a setting"),
        ("URL = postgresql://me:Key1@db/aoe", "line 2: 'URL' is not a setting"),
        ("url: postgresql://me:Key1@db/aoe", "line 2: not a setting"),
        ("postgresql://me:Key1@db/aoe = x", "line 2: not a setting"),
    ],
)
def test_a_line_of_store_conf_that_is_no_setting_is_refused_without_showing_it(tmp_path: Path, line: str, said: str) -> None:
    """A misspelt key was dropped: runs meant for the shared store went to this host's history without a word. The
    line is named by its number, and only a key that is a plain word is shown: the line may hold a password."""
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "store.conf").write_text(f"# by hand\n{line}\n")
    done = aoe_runner(Home(tmp_path), "runs", "list")
    assert done.returncode == 2 and said in done.stderr and "Key1" not in done.stderr, done.stderr


def test_the_password_can_come_from_a_pgpass_file_alone(tmp_path: Path, secret_url: str) -> None:
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"*:*:*:{PASSWORD_ROLE}:{PASSWORD}\n")
    pgpass.chmod(0o600)
    home = SharedHome(tmp_path, secret_url.replace(f":{PASSWORD}@", "@"))
    done = subprocess.run(
        [sys.executable, "-m", "aoe_runner", "runs", "list"], env={**home.env, "PGPASSFILE": str(pgpass)},
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "no runs recorded\n", "")


def test_the_url_written_and_shown_has_no_password_wherever_it_was_given() -> None:
    from aoe_runner.store.choice import redact, without_password

    url = "postgresql://me:pw@db:5433/aoe?host=/run/pg&password=other&sslmode=require"
    assert without_password(url) == "postgresql://me@db:5433/aoe?host=/run/pg&sslmode=require"
    assert redact(url) == "postgresql://me@db:5433/aoe?host=/run/pg&sslmode=require"
    assert without_password("postgresql:///aoe?host=/tmp") == "postgresql:///aoe?host=/tmp"


def test_a_password_put_into_store_conf_by_hand_is_refused_not_used(tmp_path: Path, secret_url: str) -> None:
    home = Home(tmp_path)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "store.conf").write_text(f"url = {secret_url}\n")
    done = aoe_runner(home, "runs", "list")
    assert done.returncode == 2
    assert "store.conf: holds a password; keep it in ~/.pgpass or PGPASSWORD, never in this file" in done.stderr
    assert PASSWORD not in done.stderr


@pytest.mark.parametrize("parameter", ["password", "sslpassword"])
def test_a_password_parameter_that_libpq_cannot_decode_is_not_shown(tmp_path: Path, pg_url: str, parameter: str) -> None:
    """`?password=Hunter2-50%off`: libpq's "invalid percent-encoded token" quoted it as written, unscrubbed."""
    done = aoe_runner(Home(tmp_path), "--store", f"{pg_url}&{parameter}=Hunter2-50%off", "runs", "list")
    assert done.returncode == 4 and "invalid percent-encoded token" in done.stderr, done.stderr
    assert "Hunter2" not in done.stderr
