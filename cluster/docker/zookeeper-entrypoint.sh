#!/bin/sh
# Writes the member's myid and zoo.cfg, then runs the server in the foreground.
set -eu
data=/data
mkdir -p "$data"
echo "${ZOO_MY_ID:?set ZOO_MY_ID}" > "$data/myid"
{
  echo "tickTime=500"; echo "initLimit=20"; echo "syncLimit=10"
  echo "dataDir=$data"; echo "clientPort=2181"
  echo "admin.enableServer=false"; echo "4lw.commands.whitelist=srvr,mntr,ruok"
  echo "minSessionTimeout=1000"; echo "maxSessionTimeout=20000"
  for server in ${ZOO_SERVERS:?set ZOO_SERVERS}; do
    echo "server.${server%%=*}=${server#*=}:2888:3888"
  done
} > /zoo.cfg
exec java -Xmx128m -XX:+UseSerialGC -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
  org.apache.zookeeper.server.quorum.QuorumPeerMain /zoo.cfg
