"""The minimal /etc of a `local` sandbox: what the host toolchain needs, never the host's secrets.

The host's /etc holds /etc/shadow, service credentials (EnvironmentFiles, SSH host keys, cloud
tokens) and whatever an operator left there, so it is never bound whole. A sandbox gets:
  - generated files: passwd and group naming the sandbox user, hosts, hostname, and fixed copies
    of the files operators keep proxy settings and credentials in (gitconfig, wgetrc, profile,
    bash.bashrc), which the host's own would put in every sandbox;
  - host files from an allow list (the dynamic loader's cache, TLS certificates, the OS release,
    the time zone, Debian's alternatives links, name-service and Python configuration), each
    only when every user may read it, so nothing the host keeps private comes in by mistake;
  - resolv.conf only for a sandbox with network.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

SANDBOX_UID = 65534
SANDBOX_GID = 65534
SANDBOX_USER = "sandbox"

PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_GID}:sandbox user:/app:/bin/bash\n"
)
GROUP = f"root:x:0:\n{SANDBOX_USER}:x:{SANDBOX_GID}:\n"
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tsandbox\n"

# Fixed copies in place of the host's: a host's /etc/gitconfig can name credential helpers, its
# wgetrc and profile proxies with their passwords.
FIXED = {
    "gitconfig": "# boxbench: the sandbox's own, not the host's\n",
    "wgetrc": "# boxbench: the sandbox's own, not the host's\npassive_ftp = on\n",
    "profile": (
        "# boxbench: the sandbox's own, not the host's\n"
        'PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"\nexport PATH\n'
        'if [ "${PS1-}" ] && [ "${BASH-}" ]; then . /etc/bash.bashrc; fi\n'
    ),
    "bash.bashrc": "# boxbench: the sandbox's own, not the host's\n[ -z \"${PS1-}\" ] && return\n",
}

# Read-only from the host when present and readable by everyone. Directories come whole.
HOST_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates.conf",
    "os-release",
    "debian_version",
    "lsb-release",
    "localtime",
    "timezone",
    "alternatives",
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "protocols",
    "services",
    "networks",
    "mime.types",
    "magic",
    "magic.mime",
    "python3",
    "python3.11",
    "python3.12",
    "python3.13",
    "perl",
    "shells",
    "inputrc",
    "locale.alias",
    "papersize",
    "mke2fs.conf",
)
NETWORK_FILES = ("resolv.conf",)


def _readable_by_all(path: Path) -> bool:
    try:
        mode = path.stat().st_mode  # follows links: /etc/localtime, /etc/os-release
    except OSError:
        return False
    wanted = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    return mode & wanted == wanted


def _data_fd(text: str) -> int:
    fd = os.memfd_create("boxbench-etc")
    os.write(fd, text.encode())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def minimal_etc(network: bool, etc: Path = Path("/etc")) -> tuple[list[str], list[int]]:
    """bubblewrap arguments building /etc, and the descriptors they name (the caller passes
    them to bubblewrap and closes them)."""
    fds = {
        "passwd": _data_fd(PASSWD),
        "group": _data_fd(GROUP),
        "hosts": _data_fd(HOSTS),
        "hostname": _data_fd("sandbox\n"),
        **{name: _data_fd(text) for name, text in FIXED.items()},
    }
    args = ["--dir", "/etc"]
    for name, fd in fds.items():
        args += ["--perms", "0644", "--ro-bind-data", str(fd), f"/etc/{name}"]
    for name in HOST_FILES + (NETWORK_FILES if network else ()):
        source = etc / name
        if "/" in name and _readable_by_all(source):
            args += ["--perms", "0755", "--dir", f"/etc/{Path(name).parent}"]
        if _readable_by_all(source):
            args += ["--ro-bind", str(source.resolve()), f"/etc/{name}"]
    return args, list(fds.values())
