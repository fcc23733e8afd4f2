/*
 * The NameNode's block placement for custody's HDFS (harness and compose): Hadoop's
 * default policy, except that a new block is never placed on a DataNode whose last
 * heartbeat is older than the stale interval while enough fresh DataNodes remain.
 *
 * Why: Hadoop's default policy avoids stale DataNodes for writes only while its count
 * of stale DataNodes is above zero, and that count is taken by the heartbeat monitor,
 * which runs every 5 s (HeartbeatManager.Monitor). For 1 to 6 s after a DataNode's
 * death the NameNode hands it out for new blocks, though each placement could see
 * that its heartbeats stopped (DatanodeInfo.isStale). Hadoop's Java client then asks
 * again, excluding it; a client that cannot (hdfs-native 0.14.7 passes no
 * excludeNodes) waits on the dead pipeline or makes the file again, and a writer
 * that makes several new files at once (a write-ahead log's checkpoint) meets it on
 * most of them. Here each placement judges each DataNode by its own last heartbeat:
 * one that missed the stale interval is excluded as if the client had asked.
 *
 * When the fresh DataNodes cannot take all the replicas asked for (one full for a block
 * of this size, its room held by blocks scheduled and not finished), the block gets the
 * fresh ones that can: fewer replicas than asked, as Hadoop gives whenever too few
 * DataNodes can take a block (the NameNode copies it again once it is complete), rather
 * than a stale DataNode, which is most often a dead one that the writer waits on. Only
 * when no fresh DataNode can take it is the choice made as the default policy makes it.
 *
 * Built by `custody services install` (cluster/services/install.py) against the
 * fetched Hadoop jars, and named in hdfs-site.properties (dfs.block.replicator.classname).
 */
package io.custody.hdfs;

import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.hadoop.fs.StorageType;
import org.apache.hadoop.hdfs.AddBlockFlag;
import org.apache.hadoop.hdfs.DFSConfigKeys;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.protocol.BlockStoragePolicy;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.hdfs.server.blockmanagement.BlockPlacementPolicyDefault;
import org.apache.hadoop.hdfs.server.blockmanagement.DatanodeStorageInfo;
import org.apache.hadoop.net.Node;
import org.apache.hadoop.net.NodeBase;

public class FreshTargetsBlockPlacementPolicy extends BlockPlacementPolicyDefault {
  // The NameNode's own setting, from the hdfs-site.xml on its class path (`initialize`
  // cannot be overridden from outside Hadoop's package: one of its types is not public).
  private final long staleIntervalMs = new HdfsConfiguration().getLong(
      DFSConfigKeys.DFS_NAMENODE_STALE_DATANODE_INTERVAL_KEY,
      DFSConfigKeys.DFS_NAMENODE_STALE_DATANODE_INTERVAL_DEFAULT);

  @Override
  public DatanodeStorageInfo[] chooseTarget(String src, int numOfReplicas, Node writer,
      List<DatanodeStorageInfo> chosen, boolean returnChosenNodes, Set<Node> excludedNodes,
      long blocksize, BlockStoragePolicy storagePolicy, EnumSet<AddBlockFlag> flags) {
    Set<Node> widened = withoutStale(excludedNodes, chosen, numOfReplicas);
    DatanodeStorageInfo[] targets = super.chooseTarget(src, numOfReplicas, writer, chosen,
        returnChosenNodes, widened, blocksize, storagePolicy, flags);
    if (widened == excludedNodes || given(targets, chosen, returnChosenNodes) > 0) {
      return targets;
    }
    return super.chooseTarget(src, numOfReplicas, writer, chosen, returnChosenNodes,
        excludedNodes, blocksize, storagePolicy, flags);
  }

  @Override
  public DatanodeStorageInfo[] chooseTarget(String src, int numOfReplicas, Node writer,
      List<DatanodeStorageInfo> chosen, boolean returnChosenNodes, Set<Node> excludedNodes,
      long blocksize, BlockStoragePolicy storagePolicy, EnumSet<AddBlockFlag> flags,
      EnumMap<StorageType, Integer> sTypes) {
    Set<Node> widened = withoutStale(excludedNodes, chosen, numOfReplicas);
    DatanodeStorageInfo[] targets = super.chooseTarget(src, numOfReplicas, writer, chosen,
        returnChosenNodes, widened, blocksize, storagePolicy, flags, sTypes);
    if (widened == excludedNodes || given(targets, chosen, returnChosenNodes) > 0) {
      return targets;
    }
    return super.chooseTarget(src, numOfReplicas, writer, chosen, returnChosenNodes,
        excludedNodes, blocksize, storagePolicy, flags, sTypes);
  }

  /**
   * How many new targets a choice gave (`targets` holds the `chosen` ones too when
   * `returnChosenNodes`). None from the fresh DataNodes (all full, or out of service):
   * the choice is made again as the default policy makes it.
   */
  private static int given(DatanodeStorageInfo[] targets, List<DatanodeStorageInfo> chosen,
      boolean returnChosenNodes) {
    return targets.length - (returnChosenNodes && chosen != null ? chosen.size() : 0);
  }

  /**
   * `excluded` and every stale DataNode, if at least `wanted` DataNodes are none of
   * these nor already `chosen` (else `excluded` as it is: too few fresh ones, and the
   * default policy decides, as it does when most DataNodes are stale).
   */
  private Set<Node> withoutStale(Set<Node> excluded, List<DatanodeStorageInfo> chosen, int wanted) {
    Set<Node> taken = new HashSet<>();
    if (chosen != null) {
      for (DatanodeStorageInfo storage : chosen) {
        taken.add(storage.getDatanodeDescriptor());
      }
    }
    Set<Node> stale = new HashSet<>();
    int fresh = 0;
    for (Node node : clusterMap.getLeaves(NodeBase.ROOT)) {
      if ((excluded != null && excluded.contains(node)) || taken.contains(node)) {
        continue;
      }
      if (node instanceof DatanodeInfo && ((DatanodeInfo) node).isStale(staleIntervalMs)) {
        stale.add(node);
      } else {
        fresh++;
      }
    }
    if (stale.isEmpty() || fresh < wanted) {
      return excluded;
    }
    Set<Node> widened = excluded == null ? new HashSet<>() : new HashSet<>(excluded);
    widened.addAll(stale);
    return widened;
  }
}
