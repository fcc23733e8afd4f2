#!/bin/sh
# Writes the member's myid and zoo.cfg, then runs the server in the foreground.
set -eu
data=/data
mkdir -p "$data"
echo "${ZOO_MY_ID:?set ZOO_MY_ID}" > "$data/myid"
# tickTime 200 ms: ZooKeeper expires sessions once a tick, so a hung node's session
# ends at most a tick after its timeout (the drills' and the harness's tick); followers
# get 10 s to join and 5 s to stay in sync, as before.
{
  echo "tickTime=200"; echo "initLimit=50"; echo "syncLimit=25"
  echo "dataDir=$data"; echo "clientPort=2181"
  echo "admin.enableServer=false"; echo "4lw.commands.whitelist=srvr,mntr,ruok"
  echo "minSessionTimeout=1000"; echo "maxSessionTimeout=20000"
  for server in ${ZOO_SERVERS:?set ZOO_SERVERS}; do
    echo "server.${server%%=*}=${server#*=}:2888:3888"
  done
} > /zoo.cfg
# As the harness runs it (cluster/services/jit.py): the JIT's C1 alone.
exec java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
  org.apache.zookeeper.server.quorum.QuorumPeerMain /zoo.cfg
