// What the cluster subsystem provides to the others (service-refs.ts names it).
import type { ClusterSettingsService } from './settings.ts';

export interface ClusterService {
  /** The cluster-wide settings as this node last read them (docs/cluster.md). */
  readonly settings: ClusterSettingsService;
  readonly nodeId: string;
  isLeader(): boolean;
  /** Called on every change of leadership; returns an unsubscribe. */
  onLeaderChange(handler: (leader: boolean) => void): () => void;
}
