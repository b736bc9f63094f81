# Sourced by the benchmark scripts that can run on a PostgreSQL cluster of their own
# (PRIVATE_PG=1): initdb's defaults, loopback only, in the script's temporary directory.

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)

# as_pg runs a command as the postgres user when root (initdb refuses root), else as is.
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }

# private_pg_start DIR PORT [SETTINGS]: a new cluster in DIR/pg listening on 127.0.0.1:PORT,
# SETTINGS added to the server's command line (e.g. "-c max_connections=200").
private_pg_start() {
  local dir=$1 port=$2 settings=${3:-}
  mkdir "$dir/pg"
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir" "$dir/pg"; fi
  as_pg "$pgbin/initdb -D $dir/pg -A trust -U postgres" >/dev/null
  as_pg "$pgbin/pg_ctl -D $dir/pg -l $dir/pg.log -w start -o \"-p $port -k $dir -c listen_addresses=127.0.0.1 $settings\"" >/dev/null
}

# private_pg_stop DIR: stops the cluster private_pg_start made there, if any.
private_pg_stop() { as_pg "$pgbin/pg_ctl -D $1/pg -m fast stop" >/dev/null 2>&1 || true; }
