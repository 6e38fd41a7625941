"""A throw-away PostgreSQL server in a temporary directory, on a Unix socket only: for tests and benchmarks.

Debian's server binaries (initdb, pg_ctl) are found on PATH or under /usr/lib/postgresql/<version>/bin. PostgreSQL
refuses to run as root, so as root the cluster belongs to the `postgres` user (or `nobody`) and runs as that user.
Connections are `trust` on the socket, except for the role PASSWORD_ROLE, which needs its password (to test that a
password never shows).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

PASSWORD_ROLE = "secretive"
_HBA = f"local all {PASSWORD_ROLE} scram-sha-256\nlocal all all trust\n"


def server_binaries() -> Path | None:
    """The directory holding initdb and pg_ctl, or None when the server is not installed."""
    for candidate in [shutil.which("initdb"), *sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)]:
        if candidate and os.access(candidate, os.X_OK) and Path(candidate).with_name("pg_ctl").exists():
            return Path(os.path.realpath(candidate)).parent
    return None


@dataclass
class PgServer:
    binaries: Path
    root: Path
    user: str  # the unix user the server runs as, and its superuser role

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    def url(self, database: str = "postgres", role: str | None = None, password: str | None = None) -> str:
        credentials = f"{role or self.user}{':' + password if password else ''}"
        return f"postgresql://{credentials}@/{database}?host={self.socket_dir}"

    @classmethod
    def create(cls) -> PgServer:
        binaries = server_binaries()
        if binaries is None:
            raise FileNotFoundError("PostgreSQL's initdb and pg_ctl are not installed (apt-get install postgresql)")
        user = _server_user()
        root = Path(tempfile.mkdtemp(prefix="aoe-runner-pg-"))
        server = cls(binaries, root, user)
        server.socket_dir.mkdir()
        if os.geteuid() == 0:
            os.chmod(root, 0o755)
            for path in (root, server.socket_dir):
                shutil.chown(path, user)
        server._as_server_user("initdb", "-D", str(server.data), "-U", user, "--auth=trust", "-E", "UTF8", "--no-sync")
        (server.data / "pg_hba.conf").write_text(_HBA)
        return server

    def start(self) -> None:
        options = f"-k {self.socket_dir} -c listen_addresses='' -c fsync=off -c max_connections=100"
        log = str(self.root / "server.log")
        self._as_server_user("pg_ctl", "-D", str(self.data), "-l", log, "-o", options, "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._as_server_user("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def sql(self, statement: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as db:
            db.execute(statement)

    def _as_server_user(self, program: str, *arguments: str, check: bool = True) -> None:
        command = [str(self.binaries / program), *arguments]
        if os.geteuid() == 0:
            command = ["setpriv", f"--reuid={self.user}", f"--regid={pwd.getpwnam(self.user).pw_gid}", "--clear-groups", *command]
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.root, timeout=120)
        if check and done.returncode != 0:
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")


def _server_user() -> str:
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid()).pw_name
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root, and neither a postgres nor a nobody user exists to run the server as")
