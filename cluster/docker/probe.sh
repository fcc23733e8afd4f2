#!/bin/bash
# custody-probe PORT [REQUEST PATTERN]: the healthchecks of docker-compose.yml, with
# nothing but bash (the Hadoop and ZooKeeper images carry a JRE and no HTTP client).
# Connects to 127.0.0.1:PORT through bash's /dev/tcp; with REQUEST, sends it and
# succeeds when the answer matches the extended regular expression PATTERN. REQUEST
# "GET /path" is sent as an HTTP/1.0 request, so the server closes the connection
# after its answer; anything else is sent as it is (a ZooKeeper four-letter word).
#   custody-probe 8020
#   custody-probe 2181 srvr 'Mode: (leader|follower)'
#   custody-probe 8080 'GET /ready' '^HTTP/[0-9.]+ 200 '
set -u
port=$1 request=${2-} pattern=${3-}
case $request in
  "GET "*) request="$request HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" ;;
esac
exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
[ -n "$request" ] || exit 0
printf '%b' "$request" >&3
# Any failure is 1, "unhealthy" (Docker reserves exit status 2).
grep -Eq -- "$pattern" <&3 || exit 1
