#!/bin/sh
# Prints the hdfs-site.xml of one HDFS daemon: the settings the file $2 gives daemon $1
# (namenode, datanode or client), then each further NAME=VALUE argument (the daemon's
# own: addresses, directories, replication, safe mode). $2 is the project's one file of
# HDFS settings, cluster/services/hadoop/hdfs-site.properties, which the test harness
# reads too (cluster/services/hdfs.py, `shared_settings`, which also checks its format:
# `name=value` or `namenode:`/`datanode:name=value`, no blank in a line, `#` comments).
set -eu
daemon="${1:?namenode, datanode or client}"
settings="${2:?the settings file}"
shift 2
property() { echo "  <property><name>$1</name><value>$2</value></property>"; }
echo "<configuration>"
sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$settings" | while IFS='=' read -r name value; do
  case "$name" in
    *:*) [ "${name%%:*}" = "$daemon" ] || continue; name="${name#*:}" ;;
  esac
  property "$name" "$value"
done
for setting in "$@"; do
  property "${setting%%=*}" "${setting#*=}"
done
echo "</configuration>"
