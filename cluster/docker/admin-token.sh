#!/bin/sh
# The compose cluster's secrets: docker-compose.yml's one-shot service admin-token.
# The admin token: its first run creates a token with the role admin; the nodes' token file
# (/etc/custody/admin/tokens, the volume admin-tokens, mounted read-only into every
# node) gets its hash only, and the token itself stays in a volume that no node mounts.
# Every run prints it:
#   docker compose run --rm --no-deps -T admin-token
set -eu
tokens=/etc/custody/admin/tokens
saved=/var/lib/custody-admin/token
umask 077
if [ ! -s "$saved" ] || [ ! -s "$tokens" ]; then
  custody admin token --file "$tokens" --role admin --name compose > "$saved.new"
  mv "$saved.new" "$saved"
fi
# The cluster's ZooKeeper credentials (NODE.toml [zookeeper] credentials_file): made
# once, in the volume zookeeper-credentials, which the nodes mount read-only. Every
# znode the nodes create is that identity's alone.
credentials=/etc/custody/zookeeper/credentials
if [ ! -s "$credentials" ]; then
  printf 'custody:%s\n' "$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')" > "$credentials.new"
  mv "$credentials.new" "$credentials"
fi
cat "$saved"
