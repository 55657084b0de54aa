#!/usr/bin/env bash
# Builds pgvector (the copy in test/vendor/pgvector, release v0.8.6, PostgreSQL licence) into a private copy
# of Debian's newest PostgreSQL, so that the cluster-mode tests and benches can run a real server with
# pgvector (test/helpers/postgres.ts, `startPostgres({ pgvector: true })`) while Debian's own installation
# stays as Debian ships it: without pgvector, which is what the tests of "this server lacks pgvector" need.
#
# Why a copy of the sources: neither Debian 12 nor npm ships pgvector for a native PostgreSQL, and CI reaches
# no network but npm's registry and Debian's packages. Why a copy of the server: PostgreSQL finds its
# extensions beside its own binary (its share and lib folders are found relative to bin/), so a copied tree
# with pgvector installed in it is a second server with pgvector, and the first one is left alone.
#
# Needs Debian's postgresql-server-dev-<version> (headers and pgxs; .ci/run installs it) and a C compiler.
# Prints the folder of the copied server's binaries. Idempotent: a second run with the same sources is a no-op.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="${KNODE_PGVECTOR_ROOT:-/var/tmp/knode-pgvector}"
version="$(ls /usr/lib/postgresql | sort -n | tail -1)"
pg_config="/usr/lib/postgresql/$version/bin/pg_config"
bin="$root/usr/lib/postgresql/$version/bin"
stamp="$root/.built-from"
sources_hash="$(cat "$here"/pgvector/Makefile "$here"/pgvector/src/* "$here"/pgvector/sql/* | sha256sum | cut -c1-16)-$version"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sources_hash" ] && [ -x "$bin/postgres" ]; then
  echo "$bin"
  exit 0
fi
if [ ! -x "$pg_config" ] || [ ! -d "/usr/include/postgresql/$version/server" ]; then
  echo "postgresql-server-dev-$version is missing: apt-get install postgresql-server-dev-$version" >&2
  exit 1
fi

rm -rf "$root"
mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql"
cp -a "/usr/lib/postgresql/$version" "$root/usr/lib/postgresql/"
cp -a "/usr/share/postgresql/$version" "$root/usr/share/postgresql/"

build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
cp -a "$here/pgvector/." "$build/"
# with_llvm=no: no JIT bitcode (it would need clang, and knode's queries are too short for JIT to pay).
make -s -C "$build" PG_CONFIG="$pg_config" with_llvm=no -j"$(nproc)" >&2
make -s -C "$build" PG_CONFIG="$pg_config" with_llvm=no DESTDIR="$root" install >&2
# The server copy runs as the `postgres` user when the tests run as root (initdb refuses root).
if [ "$(id -u)" -eq 0 ]; then chmod -R a+rX "$root"; fi
echo "$sources_hash" >"$stamp"
echo "$bin"
