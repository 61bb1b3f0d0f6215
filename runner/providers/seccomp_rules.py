"""The system calls every sandbox we start is refused (`local`'s filter, local/seccomp.py, and
`docker`'s profile, docker_seccomp.py): the refusals of Docker's default profile for a container
without extra capabilities, plus ptrace and process_vm_readv/writev. Pure data."""

REFUSED = (
    # namespaces and mounts
    "unshare",
    "setns",
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "mount_setattr",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    # other processes' memory: the commands share one user, and a replay's seal must stay
    # out of their reach (runner/traces/guard.py); /proc/PID/mem is closed by dumpability
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    # kernel keyrings
    "keyctl",
    "add_key",
    "request_key",
    # BPF, performance counters, userfaultfd, io_uring
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # kernel modules and kexec
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "query_module",
    "get_kernel_syms",
    "kexec_load",
    "kexec_file_load",
    # the machine's clocks, swap, power, accounting, quota, host names
    "settimeofday",
    "stime",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "quotactl_fd",
    "sethostname",
    "setdomainname",
    "syslog",
    "vhangup",
    # file handles (they bypass path permissions), obsolete and I/O-port calls, NUMA policy
    "name_to_handle_at",
    "open_by_handle_at",
    "lookup_dcookie",
    "nfsservctl",
    "uselib",
    "ustat",
    "sysfs",
    "_sysctl",
    "iopl",
    "ioperm",
    "vm86",
    "vm86old",
    "kcmp",
    "get_mempolicy",
    "set_mempolicy",
    "mbind",
    "move_pages",
    "migrate_pages",
)

# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (Docker's mask 0x7E020000).
NAMESPACE_FLAGS = (
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
)
