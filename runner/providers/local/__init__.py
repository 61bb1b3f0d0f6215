"""`local`: each sandbox is a bubblewrap namespace sandbox on the job host.

A sandbox is a directory under the sandbox root:

    <root>/<id>/sandbox.json   metadata: batch label, lifetime, host pid of the sandbox's init
    <root>/<id>/app/           the fresh working directory, bound at /app inside
    <root>/<id>/bwrap.log      bubblewrap's own error output

bwrap starts detached (its own session) with every namespace unshared (no network unless the spec
asks for it), the host toolchain read-only (/usr, /etc and the /bin, /lib links) and a private
/tmp. Its command is `sleep <lifetime>`: when that exits, the sandbox's PID namespace loses its
init and the kernel ends every process in it, so a crashed runner leaves at most a directory
behind, which `bench cleanup` removes.

Commands are forked by an exec helper inside the sandbox (runner/providers/local/spawner.py, run by
the system Python in place of `sleep <lifetime>` and ending the sandbox the same way), reached on a
Unix socket the runner binds before bubblewrap starts and hands to it. A forked command is born in
the sandbox's namespaces and cgroups: no `nsenter` and no cgroup migration per exec, which cost
about 7 ms per call under load (bench/bench_exec_latency.py). Background processes started by one
call survive until the next.

The requested size is enforced with cgroups (v2 cpu.max/memory.max, or v1 CFS quota and memory
limit) nested under the runner's own cgroup, where the kernel lets us create them; the sandbox's
facts say when it could not. nproc and /proc/meminfo inside still report the host's figures.

The package: adapter.py (LocalProvider: create, exec, transfer, destroy, listing, doctor),
cgroups.py (the size limits), toolchain.py (the host toolchain bound into every sandbox, and its
identity digest) and spawner.py (the exec helper, read as text and run inside the sandbox).
"""

from runner.providers.local.adapter import LocalProvider
from runner.providers.local.toolchain import host_toolchain_identity

__all__ = ["LocalProvider", "host_toolchain_identity"]
