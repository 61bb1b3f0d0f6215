"""`local`: each sandbox is a bubblewrap namespace sandbox on the job host.

A sandbox is a directory under the sandbox root:

    <root>/<id>/sandbox.json   metadata: batch label, lifetime, host pid of the sandbox's init,
                               the exec helper's token (mode 0600; the root and each sandbox's
                               directory are 0700, so no other local user reads it)
    <root>/<id>/bwrap.log      bubblewrap's own error output
    <root>/ls-<hex>/           a snapshot: snapshot.json (batch label) and archive.tar

bwrap starts detached (its own session) with every namespace unshared (no network unless the spec
asks for it), as the unprivileged uid/gid 65534 in a user namespace of its own that maps only
that user and allows no nested one, with no capabilities, no new privileges and a seccomp filter
(seccomp.py). Inside: the host toolchain read-only (/usr and the /bin, /lib links), a minimal
/etc (etc.py, never the host's secrets), and sized tmpfs mounts for /app, /tmp and /dev/shm whose
pages count against the sandbox's memory cgroup; / and /dev are read-only. Its command is the
exec helper (spawner.py), started as the PID namespace's init (`--as-pid-1`, so no bubblewrap
init waits for stray children) and ending after the sandbox's lifetime: then the namespace loses
its init and the kernel ends every process in it, setsid or not. A command cannot end the helper
early (a namespace's init gets no signal it does not handle). Should the helper be gone or stuck
anyway, the host-side expiry (`LocalProvider.expire`, run by every listing and create) kills
whatever is left in the sandbox's cgroups once `expires_at` has passed. So a crashed runner,
`./boxbench.sh stop` or a failed destroy leaves at most a directory behind, which `bench cleanup`
removes.

Commands are started by that exec helper (posix_spawn), reached on a Unix socket the runner
binds before bubblewrap starts and hands to it, with a token that reaches the helper on a pipe
(never an argument list, which every local user can read). A command is born in the sandbox's
namespaces, cgroups, user and filter: no `nsenter` and no cgroup migration per exec, which cost
about 7 ms per call under load (bench/bench_exec_latency.py). Background processes started by
one call survive until the next.

The cpu, memory and pids limits are cgroups (v2 cpu.max/memory.max/pids.max, or v1 CFS quota,
memory limit and pids.max) nested under the runner's own cgroup; a create that cannot set them up
fails, unless the operator set BOXBENCH_LOCAL_ALLOW_UNLIMITED. nproc and /proc/meminfo inside
still report the host's figures.

The package: adapter.py (LocalProvider: create, exec, transfer, destroy, listing, doctor),
cgroups.py (the limits), seccomp.py (the filter), etc.py (the minimal /etc), toolchain.py (the
host toolchain bound into every sandbox, and its identity digest), snapshots.py (snapshots and
forks: a plain copy of /app and /tmp, restored into a fresh sandbox), spawner.py (the exec
helper, read as text and run inside the sandbox) and wire.py (the runner's side of its pipes).
"""

from runner.providers.local.adapter import LocalProvider
from runner.providers.local.toolchain import host_toolchain_identity

__all__ = ["LocalProvider", "host_toolchain_identity"]
