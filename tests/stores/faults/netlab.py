"""Hosts on one machine for partition tests: network namespaces joined by veth links.

``NetLab(["a", "b"])`` makes a database namespace and one namespace per worker, each worker
linked to the database by its own veth pair (``10.N.i.2`` ↔ ``10.N.i.1``), plus a link from
the test's own namespace (``10.N.9.2`` ↔ ``10.N.9.1``) for the checker. Faults are applied
in a worker's namespace: ``cut`` drops everything to and from the database, ``drop_replies``
only what comes back (requests still arrive), ``lossy`` drops a share of packets both ways
and limits the link's rate; ``heal`` undoes them. Needs root, ``ip``, ``iptables`` and ``tc``
(``need`` skips without them, and fails under ``CI=true``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

from tests.stores.faults.shim import need

CHECKER_LINK = 9


def _sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(args), capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed: {done.stdout}{done.stderr}")
    return done


def require() -> None:
    """Skip (fail under ``CI=true``) unless namespaces, veth links and iptables can be made."""
    need(os.geteuid() == 0, "partition tests make network namespaces: they need root")
    for tool in ("ip", "iptables", "tc"):
        need(
            shutil.which(tool) is not None, f"partition tests need {tool} (apt-get install iproute2 iptables)"
        )
    probe = f"hxprobe{uuid.uuid4().hex[:6]}"
    made = _sh("ip", "netns", "add", probe, check=False)
    try:
        need(made.returncode == 0, f"cannot create a network namespace: {made.stderr.strip()}")
        rule = _sh("ip", "netns", "exec", probe, "iptables", "-A", "INPUT", "-j", "ACCEPT", check=False)
        need(rule.returncode == 0, f"iptables does not work in a namespace: {rule.stderr.strip()}")
    finally:
        _sh("ip", "netns", "del", probe, check=False)


class NetLab:
    """The namespaces and links of one test module (see the module docs)."""

    def __init__(self, workers: list[str]) -> None:
        tag = uuid.uuid4().hex[:4]
        self._octet = 100 + int(tag, 16) % 100
        self.db = f"hx{tag}db"
        self.hosts = {name: f"hx{tag}{name}" for name in workers}
        self._links = {
            name: (f"hx{tag}{name}0", f"hx{tag}{name}1", index + 1) for index, name in enumerate(workers)
        }
        self._checker = (f"hx{tag}r0", f"hx{tag}r1", CHECKER_LINK)
        self._made: list[str] = []

    def address(self, link: int, side: int) -> str:
        return f"10.{self._octet}.{link}.{side}"

    def db_address(self, worker: str | None = None) -> str:
        """The database's address as ``worker`` (or, with ``None``, the checker) reaches it."""
        link = CHECKER_LINK if worker is None else self._links[worker][2]
        return self.address(link, 1)

    def listen(self) -> str:
        """Every database address, for ``listen_addresses``."""
        links = [link for _, _, link in self._links.values()] + [CHECKER_LINK]
        return ",".join(self.address(link, 1) for link in links)

    def up(self) -> None:
        for ns in (self.db, *self.hosts.values()):
            _sh("ip", "netns", "add", ns)
            self._made.append(ns)
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
        for name, (outer, inner, link) in self._links.items():
            ns = self.hosts[name]
            _sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
            _sh("ip", "link", "set", outer, "netns", ns)
            _sh("ip", "link", "set", inner, "netns", self.db)
            _sh("ip", "-n", ns, "addr", "add", f"{self.address(link, 2)}/24", "dev", outer)
            _sh("ip", "-n", self.db, "addr", "add", f"{self.address(link, 1)}/24", "dev", inner)
            _sh("ip", "-n", ns, "link", "set", outer, "up")
            _sh("ip", "-n", self.db, "link", "set", inner, "up")
        outer, inner, link = self._checker
        _sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
        _sh("ip", "link", "set", inner, "netns", self.db)
        _sh("ip", "addr", "add", f"{self.address(link, 2)}/24", "dev", outer)
        _sh("ip", "-n", self.db, "addr", "add", f"{self.address(link, 1)}/24", "dev", inner)
        _sh("ip", "link", "set", outer, "up")
        _sh("ip", "-n", self.db, "link", "set", inner, "up")

    def down(self) -> None:
        _sh("ip", "link", "del", self._checker[0], check=False)
        for ns in self._made:
            _sh("ip", "netns", "del", ns, check=False)
        self._made.clear()

    def exec_in(self, worker: str) -> list[str]:
        """The command prefix that runs a program on ``worker``'s host."""
        return ["ip", "netns", "exec", self.hosts[worker]]

    def _iptables(self, worker: str, *rule: str) -> None:
        _sh("ip", "netns", "exec", self.hosts[worker], "iptables", *rule)

    def cut(self, *workers: str) -> None:
        """Nothing passes between each of ``workers`` and the database, either way."""
        for worker in workers:
            db = self.db_address(worker)
            self._iptables(worker, "-I", "INPUT", "-s", db, "-j", "DROP")
            self._iptables(worker, "-I", "OUTPUT", "-d", db, "-j", "DROP")

    def drop_replies(self, worker: str) -> None:
        """``worker``'s packets reach the database; nothing comes back (not even TCP ACKs)."""
        self._iptables(worker, "-I", "INPUT", "-s", self.db_address(worker), "-j", "DROP")

    def lossy(self, worker: str, loss: float, rate: str) -> None:
        """Drop ``loss`` of the packets each way at random and cap what ``worker`` sends at
        ``rate`` (a token bucket whose queue adds delay as it fills)."""
        db = self.db_address(worker)
        odds = f"{loss:.3f}"
        self._iptables(worker, "-I", "INPUT", "-s", db, "-m", "statistic", "--mode", "random",
                       "--probability", odds, "-j", "DROP")  # fmt: skip
        self._iptables(worker, "-I", "OUTPUT", "-d", db, "-m", "statistic", "--mode", "random",
                       "--probability", odds, "-j", "DROP")  # fmt: skip
        outer = self._links[worker][0]
        _sh("ip", "netns", "exec", self.hosts[worker], "tc", "qdisc", "add", "dev", outer, "root",
            "tbf", "rate", rate, "burst", "16kbit", "latency", "300ms")  # fmt: skip

    def heal(self, *workers: str) -> None:
        """Undo every fault on the links of ``workers``."""
        for worker in workers:
            self._iptables(worker, "-F", "INPUT")
            self._iptables(worker, "-F", "OUTPUT")
            outer = self._links[worker][0]
            _sh("ip", "netns", "exec", self.hosts[worker], "tc", "qdisc", "del", "dev", outer, "root",
                check=False)  # fmt: skip
