#!/usr/bin/env bash
# boxbench's two entry points, for a fresh Linux machine (Debian or Ubuntu) with Python 3.11+:
#
#   ./boxbench.sh run    install what is needed, run the default benchmark plan on the local
#                        sandbox (and on Podman/Docker when available), then serve the dashboard
#                        on http://127.0.0.1:8000 with gunicorn (boxbench/gunicorn_conf.py);
#                        `run --dev` serves it with Django's development server instead
#   ./boxbench.sh test   install what is needed and run the whole test suite, on SQLite and
#                        again on PostgreSQL
#   ./boxbench.sh web-user  (as root) create the unprivileged user the dashboard's gunicorn
#                        workers run as and give it what they write (run does this itself)
#
# Settings come from the environment (see .env.example).
set -euo pipefail

cd "$(dirname "$0")"
ROOT=$(pwd)
VENV=${BOXBENCH_VENV:-$ROOT/.venv}
PY=$VENV/bin/python
VAR=${BOXBENCH_VAR_DIR:-$ROOT/var}
mkdir -p "$VAR"

# Debian packages: the sandboxes (bubblewrap, with libseccomp2 for its seccomp filter and
# util-linux for setpriv; podman and runc serve the Docker Engine API),
# the tools the traces and machine benchmarks run inside them, and the test tools.
RUN_PACKAGES="bubblewrap libseccomp2 util-linux podman runc catatonit uidmap debootstrap fio sysbench git make gcc python3 python3-venv python3-pip python3-pytest procps"
TEST_PACKAGES="chromium wrk postgresql openssh-server openssl"

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else return 1; fi
}

install_packages() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! command -v apt-get >/dev/null; then
    say "Not a Debian system: install these yourself: ${missing[*]}"
    return 0
  fi
  say "Installing Debian packages: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || true
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null || say "Could not install ${missing[*]}: providers needing them are refused"
}

# Rootful Podman gives each docker sandbox a user namespace of its own (userns=auto, see
# runner/providers/docker_hardening.py) from the subordinate ids of the `containers` user: a
# range at the top of the id space, far from any login user's, added once where none is set.
ensure_subordinate_ids() {
  [ "$(id -u)" = 0 ] && command -v podman >/dev/null || return 0
  local file
  for file in /etc/subuid /etc/subgid; do
    if ! grep -q '^containers:' "$file" 2>/dev/null; then
      say "Adding subordinate ids for Podman's per-container user namespaces to $file"
      echo "containers:2147483647:2147483648" >>"$file"
    fi
  done
}

python_ok() {
  "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}

setup_venv() {
  local requirements=$1
  if [ ! -x "$PY" ]; then
    local base=""
    for candidate in python3.13 python3.12 python3.11 python3; do
      if command -v "$candidate" >/dev/null && python_ok "$candidate"; then base=$candidate; break; fi
    done
    [ -n "$base" ] || { echo "boxbench needs Python 3.11 or newer" >&2; exit 1; }
    say "Creating the virtual environment in $VENV with $base"
    "$base" -m venv "$VENV"
  fi
  local stamp=$VENV/.installed-$(sha256sum "$requirements" requirements.txt | sha256sum | cut -c1-16)
  if [ ! -e "$stamp" ]; then
    say "Installing Python packages from $requirements"
    "$PY" -m pip install -q --upgrade pip
    "$PY" -m pip install -q -r "$requirements"
    touch "$stamp"
  fi
}

# Podman's Docker-compatible service on a socket of our own, so the docker provider works
# without a Docker engine. Leaves DOCKER_HOST set when a daemon answers. The socket is recorded
# in var/engine-socket, where `manage.py bench` finds it from any shell, and the service's pid in
# var/podman-service.pid; STARTED_ENGINE=1 when this invocation started it (stopped on exit).
STARTED_ENGINE=0
start_container_engine() {
  if [ -n "${DOCKER_HOST:-}" ]; then return 0; fi
  if [ -S /var/run/docker.sock ] && command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    export DOCKER_HOST=unix:///var/run/docker.sock
    return 0
  fi
  command -v podman >/dev/null || return 0
  local socket=$VAR/podman.sock
  if [ ! -S "$socket" ] || ! pid_alive "$VAR/podman-service.pid"; then
    rm -f "$socket"
    local runtime=()
    command -v runc >/dev/null && runtime=(--runtime runc)
    setsid nohup podman "${runtime[@]}" system service --time=0 "unix://$socket" \
      >"$VAR/podman-service.log" 2>&1 &
    echo $! >"$VAR/podman-service.pid"
    STARTED_ENGINE=1
    for _ in $(seq 50); do [ -S "$socket" ] && break; sleep 0.1; done
  fi
  if [ -S "$socket" ]; then
    export DOCKER_HOST=unix://$socket
    echo "$DOCKER_HOST" >"$VAR/engine-socket"
  fi
}

# True when the pid in file $1 is a live process (its session leader, started by us).
pid_alive() {
  [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# Stop the process group whose leader's pid is in file $1 (TERM, a grace, then KILL); forget it.
stop_group() {
  local file=$1 name=$2
  if pid_alive "$file"; then
    local pid
    pid=$(cat "$file")
    say "Stopping $name (pid $pid)"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

stop_engine() {
  stop_group "$VAR/podman-service.pid" "the Podman service"
  rm -f "$VAR/engine-socket" "$VAR/podman.sock"
}

start_postgres() {
  if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then return 0; fi
  say "Starting PostgreSQL"
  local version
  version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1)
  if [ -n "$version" ]; then
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  fi
  for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 -p 5432 && return 0; sleep 0.2; done
  echo "PostgreSQL is not answering on 127.0.0.1:5432; set BOXBENCH_TEST_DATABASE_URL" >&2
  exit 1
}

ensure_test_database() {
  # Trust auth on loopback as on a fresh Debian cluster configured for CI; pytest-django
  # creates and drops its own test_<name> database next to this one.
  "$PY" - "$1" <<'PYTHON'
import sys, psycopg
url = sys.argv[1]
base, name = url.rsplit("/", 1)
with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
    if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
        conn.execute(f'CREATE DATABASE "{name}"')
PYTHON
}

# A local admin account for the dashboard's run pages and the Django admin, created once; its
# password is kept in var/admin-password (readable by this user only).
ensure_admin() {
  local password_file=$VAR/admin-password
  if [ ! -s "$password_file" ]; then
    (umask 077; "$PY" -c 'import secrets; print(secrets.token_urlsafe(12))' >"$password_file")
  fi
  BOXBENCH_ADMIN_PASSWORD=$(cat "$password_file") "$PY" manage.py shell -c '
import os
from django.contrib.auth.models import User
if not User.objects.filter(username="admin").exists():
    User.objects.create_superuser("admin", "", os.environ["BOXBENCH_ADMIN_PASSWORD"])
'
}

# The dashboard refuses to serve with the development SECRET_KEY while DEBUG is off: a random key
# is made once in var/secret-key (readable by this user only) unless one is given.
ensure_secret_key() {
  if [ -n "${SECRET_KEY:-}" ] || [ -n "${SECRET_KEY_FILE:-}" ]; then return 0; fi
  local key_file=$VAR/secret-key
  if [ ! -s "$key_file" ]; then
    (umask 077; "$PY" -c 'import secrets; print(secrets.token_urlsafe(48))' >"$key_file")
  fi
  export SECRET_KEY_FILE=$key_file
}

# Started as root, gunicorn's workers run as $WEB_USER (boxbench/gunicorn_conf.py): a system
# user without a shell or home, created once. They write the SQLite database (and its journal,
# beside it: the var directory is group-writable for them, sticky so that they cannot remove or
# rename root's files there) and the raw-data exports; they must read the checkout.
WEB_USER=${BOXBENCH_WEB_USER:-boxbench-web}
ensure_web_user() {
  [ "$(id -u)" = 0 ] || return 0
  if ! id -u "$WEB_USER" >/dev/null 2>&1; then
    say "Creating the dashboard's unprivileged user $WEB_USER"
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$WEB_USER"
  fi
}

prepare_web_user() {
  [ "$(id -u)" = 0 ] || return 0
  ensure_web_user
  mkdir -p "$VAR/exports"
  chown -R "$WEB_USER:" "$VAR/exports"
  if [ -z "${DATABASE_URL:-}" ]; then
    touch "$VAR/boxbench.sqlite3"
    chgrp "$WEB_USER" "$VAR" "$VAR/boxbench.sqlite3"
    chmod g+rwx,+t "$VAR"
    chmod g+rw "$VAR/boxbench.sqlite3"
  fi
  # The workers import modules as they go: the interpreter, its standard library, the virtual
  # environment and the checkout must be readable by the web user (Debian's python3 is; one
  # under /root is not). Where they are not, the workers stay root, said out loud.
  # The paths are root's Python's: a fresh interpreter run as the web user may find another
  # standard library, while the workers, forked from root's, keep these.
  local stdlib purelib
  stdlib=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
  purelib=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  if ! setpriv --reuid="$WEB_USER" --regid="$WEB_USER" --clear-groups -- test -r "$stdlib/os.py" \
      -a -r "$purelib/django/__init__.py" -a -r "$ROOT/boxbench/__init__.py" \
      -a -r "$ROOT/templates" -a -w "$VAR" -a -x "$VAR"; then
    say "The dashboard's workers stay root: $WEB_USER cannot run $PY or write $VAR. Install" \
      "Python, the virtual environment and the checkout where other users can read them (not" \
      "under /root) to serve without root."
    export BOXBENCH_WEB_AS_ROOT=1
  fi
}

# What `run` started is stopped when it exits, however it exits (Ctrl-C included).
on_run_exit() {
  stop_group "$VAR/dashboard.pid" "the dashboard"
  stop_group "$VAR/qcluster.pid" "the queue worker"
  if [ "$STARTED_ENGINE" = 1 ]; then stop_engine; fi
  rm -f "$VAR/run.pid"
}

# A `run` still going (its exit handler stops what it started), then anything an earlier `run`
# left running because it was killed before its exit handler ran.
cmd_stop() {
  if pid_alive "$VAR/run.pid"; then
    say "Stopping ./boxbench.sh run (pid $(cat "$VAR/run.pid"))"
    kill -TERM "$(cat "$VAR/run.pid")" 2>/dev/null || true
    for _ in $(seq 100); do pid_alive "$VAR/run.pid" || break; sleep 0.1; done
  fi
  rm -f "$VAR/run.pid"
  stop_group "$VAR/dashboard.pid" "the dashboard"
  stop_group "$VAR/qcluster.pid" "the queue worker"
  stop_engine
}

cmd_run() {
  local dev=0
  case "${1:-}" in
    --dev) dev=1 ;;
    "") ;;
    *) echo "usage: ./boxbench.sh run [--dev]" >&2; exit 2 ;;
  esac
  mkdir -p "$VAR"
  echo $$ >"$VAR/run.pid"
  trap on_run_exit EXIT
  # bash runs a trap only between commands: the dashboard below runs in the background and is
  # waited for, so that a TERM from `./boxbench.sh stop` (or Ctrl-C) ends the script, whose exit
  # handler stops what it started.
  trap 'exit 130' INT
  trap 'exit 143' TERM
  install_packages $RUN_PACKAGES
  ensure_subordinate_ids
  setup_venv requirements.txt
  ensure_secret_key
  start_container_engine
  say "Preparing the database"
  "$PY" manage.py migrate -v0
  "$PY" manage.py collectstatic --noinput -v0
  ensure_admin
  prepare_web_user
  # The image first, so that the doctor checks what the run will use (a first run would
  # otherwise report the image missing, then build it).
  local providers=local
  if [ -n "${DOCKER_HOST:-}" ]; then
    say "Preparing the standard image for the docker provider (once; cached under var/)"
    if "$PY" manage.py bench image prepare; then providers=local,docker; fi
  fi
  "$PY" manage.py bench doctor || true
  say "Removing sandboxes that earlier runs left behind"
  "$PY" manage.py bench recover || true
  "$PY" manage.py bench cleanup --max-age 0 || true
  say "Starting the queue worker"
  # In a session of its own, so that stopping it stops its worker processes too; django-q2's
  # cluster can hang on SIGTERM, so it gets a few seconds before SIGKILL.
  setsid "$PY" manage.py qcluster >"$VAR/qcluster.log" 2>&1 &
  echo $! >"$VAR/qcluster.pid"
  say "Running the default plan on: $providers"
  # Each pair the audit holds back is then re-run once (within BOXBENCH_RERUN_MAX_PAIRS) and
  # published if its re-run passes.
  if ! "$PY" manage.py bench run --plan default --provider "$providers" --publish --rerun-held-back; then
    say "The run was not published (see above); its audit report is on its run page"
  fi
  say "Dashboard on http://127.0.0.1:8000 (log in as admin with the password in $VAR/admin-password)"
  if [ "$dev" = 1 ]; then
    setsid "$PY" manage.py runserver 127.0.0.1:8000 --noreload &
  else
    # Access log in $VAR/dashboard-access.log; errors on this terminal.
    setsid "$PY" -m gunicorn -c boxbench/gunicorn_conf.py &
  fi
  echo $! >"$VAR/dashboard.pid"
  wait $!
}

cmd_test() {
  install_packages $RUN_PACKAGES $TEST_PACKAGES
  ensure_subordinate_ids
  setup_venv requirements-dev.txt
  setup_venv requirements-opensandbox.txt
  setup_venv requirements-modal.txt
  setup_venv requirements-e2b.txt
  setup_venv requirements-daytona.txt
  setup_venv requirements-vercel.txt
  setup_venv requirements-agentcore.txt
  ensure_web_user  # the dashboard's tests serve as root, with its workers as this user
  start_postgres
  local pg_url=${BOXBENCH_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
  ensure_test_database "$pg_url"
  say "ruff"
  "$VENV/bin/ruff" check .
  "$VENV/bin/ruff" format --check .
  say "mypy (stats/, runner/, boxbench/)"
  "$VENV/bin/mypy"
  # Each xdist worker has a database of its own: in memory on SQLite, test_<name>_gw<N> on
  # PostgreSQL (pytest-django names it). Many tests wait on subprocesses and sandboxes, so 3
  # workers on a 2-core machine; Podman and browser tests keep to one worker each (--dist
  # loadgroup, tests/conftest.py).
  local workers=${BOXBENCH_TEST_WORKERS:-3}
  say "Tests on SQLite ($workers workers)"
  env -u DATABASE_URL "$VENV/bin/pytest" -n "$workers" --dist loadgroup "$@"
  say "Tests that use the database, again on PostgreSQL ($pg_url, $workers workers)"
  DATABASE_URL=$pg_url BOXBENCH_DATABASE_TESTS_ONLY=1 \
    "$VENV/bin/pytest" -n "$workers" --dist loadgroup "$@"
}

case "${1:-}" in
  run) shift; cmd_run "$@" ;;
  stop) shift; cmd_stop ;;
  test) shift; cmd_test "$@" ;;
  web-user) prepare_web_user ;;
  *) echo "usage: ./boxbench.sh run [--dev] | ./boxbench.sh stop | ./boxbench.sh test [pytest arguments] | ./boxbench.sh web-user" >&2; exit 2 ;;
esac
