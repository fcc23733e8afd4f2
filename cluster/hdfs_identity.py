"""Who a node is to HDFS: the user of simple authentication, or a Kerberos principal.

hdfs-native, which every HDFS client of the product is, takes its identity from the
process's environment, not from a client argument:

* simple authentication (an HDFS without Kerberos): the user is `HADOOP_USER_NAME`,
  else the operating-system user. `[hdfs] user` sets it, so that the cluster's data
  (directories 0700, files 0600) belongs to one HDFS user, say `custody`, whatever
  account runs the node. The NameNode believes whatever name a client gives: simple
  authentication keeps honest users apart, not attackers. For that, use Kerberos.
* Kerberos (SASL GSSAPI, through the system's libgssapi_krb5): the client uses the
  ticket cache named by `KRB5CCNAME`. `[hdfs.kerberos] ticket_cache` names one that
  something else keeps fresh (k5start, a sidecar); with `principal` and `keytab` the
  node logs in itself (`kinit -k -t`) into a cache of its own before its first HDFS
  call, and again every `renew_interval` seconds.

The environment is the process's, so one node process is one HDFS identity; the
embedded Spark session inherits it and a standalone cluster's executors get the
user (`spark.executorEnv.HADOOP_USER_NAME`); Spark executors elsewhere get no
Kerberos ticket from the node (a standalone Spark cluster has no delegation tokens).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import subprocess
import threading
from dataclasses import dataclass

from .errors import ClusterError

log = logging.getLogger(__name__)

USER_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
DEFAULT_RENEW_INTERVAL = 3600.0  # seconds between two logins from the keytab
MIN_RENEW_INTERVAL = 60.0  # a ticket lives hours: more often is a slip, and a load on the KDC


class HdfsIdentityError(ClusterError):
    """The HDFS identity cannot be set up; the message names the setting and the fix."""


@dataclass(frozen=True)
class KerberosSettings:
    principal: str = ""  # "custody/host@REALM"; with keytab, the node logs in itself
    keytab: str = ""  # mode 0600 (or 0400), readable by the node's user only
    ticket_cache: str = ""  # KRB5CCNAME (NODE.toml's default with a keytab: FILE:<directory>/krb5cc)
    renew_interval: float = DEFAULT_RENEW_INTERVAL


@dataclass(frozen=True)
class HdfsIdentity:
    user: str = ""  # simple authentication's user ("" = the OS user)
    kerberos: KerberosSettings | None = None

    def check(self) -> None:
        """Refuse what cannot work, naming the setting (no I/O but the keytab's mode)."""
        if self.user and not USER_PATTERN.fullmatch(self.user):
            raise HdfsIdentityError(f"[hdfs] user must be a user name ({USER_PATTERN.pattern}), not {self.user!r}")
        kerberos = self.kerberos
        if kerberos is None:
            return
        if self.user:
            raise HdfsIdentityError(
                "[hdfs] user and [hdfs.kerberos] exclude each other: with Kerberos the "
                "principal is the HDFS user; remove one"
            )
        if bool(kerberos.principal) != bool(kerberos.keytab):
            raise HdfsIdentityError(
                "[hdfs.kerberos] principal and keytab go together (the node logs in with "
                "them); for a ticket cache kept fresh elsewhere, give ticket_cache alone"
            )
        if not kerberos.ticket_cache:
            raise HdfsIdentityError(
                "[hdfs.kerberos] needs ticket_cache, or principal and keytab (whose ticket "
                "cache is then krb5cc in the node's directory)"
            )
        if kerberos.keytab:
            private_file(kerberos.keytab, "[hdfs.kerberos] keytab")
        if kerberos.renew_interval < MIN_RENEW_INTERVAL:
            raise HdfsIdentityError(
                f"[hdfs.kerberos] renew_interval must be at least {MIN_RENEW_INTERVAL:g} seconds, "
                f"not {kerberos.renew_interval!r}"
            )

    def environment(self) -> dict[str, str]:
        """The variables this identity puts in the process's environment."""
        if self.kerberos is not None:
            return {"KRB5CCNAME": self.kerberos.ticket_cache}
        return {"HADOOP_USER_NAME": self.user} if self.user else {}

    def kinit_command(self) -> list[str] | None:
        """The login from the keytab, or None when there is none to make."""
        kerberos = self.kerberos
        if kerberos is None or not kerberos.keytab:
            return None
        return ["kinit", "-k", "-t", kerberos.keytab, "-c", kerberos.ticket_cache, kerberos.principal]


def private_file(path: str, setting: str) -> None:
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError as error:
        raise HdfsIdentityError(f"{setting} {path}: {error.strerror}") from None
    if mode & 0o077:
        raise HdfsIdentityError(f"{setting} {path} is readable by others (mode {mode:o}); chmod 600 {path}")


_lock = threading.Lock()
_applied: HdfsIdentity | None = None
_renewal: threading.Event | None = None


def apply_identity(identity: HdfsIdentity) -> None:
    """Make `identity` this process's HDFS identity, before a client is made (the
    client factory calls this). With a keytab: log in now and every `renew_interval`
    seconds until `stop_renewal()`. Applying the same identity again does nothing;
    another one is refused (the environment is the process's)."""
    global _applied, _renewal
    with _lock:
        if _applied == identity:
            return
        if _applied is not None and _applied != HdfsIdentity():
            raise HdfsIdentityError(f"this process is already HDFS identity {_applied}; one process has one")
        identity.check()
        os.environ.update(identity.environment())
        command = identity.kinit_command()
        if command is not None:
            if shutil.which(command[0]) is None:
                raise HdfsIdentityError(
                    "[hdfs.kerberos] keytab: MIT Kerberos' kinit is not on PATH; install it "
                    "(Debian: apt-get install krb5-user)"
                )
            login(command)
            _renewal = threading.Event()
            threading.Thread(
                target=_renew,
                args=(command, identity.kerberos.renew_interval, _renewal),
                name="kerberos-login",
                daemon=True,
            ).start()
        _applied = identity


def login(command: list[str]) -> None:
    principal = command[-1]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise HdfsIdentityError(
            f"kinit as {principal} failed: {(done.stderr or done.stdout).strip() or f'exit {done.returncode}'}"
        )
    log.info("logged in to Kerberos as %s (ticket cache %s)", principal, command[command.index("-c") + 1])


def _renew(command: list[str], interval: float, stopped: threading.Event) -> None:
    while not stopped.wait(interval):
        try:
            login(command)
        except (HdfsIdentityError, OSError, subprocess.SubprocessError) as error:
            # The ticket in the cache lasts a while yet; the next round tries again.
            log.error("renewing the Kerberos ticket failed: %s", error)


def stop_renewal() -> None:
    with _lock:
        if _renewal is not None:
            _renewal.set()
