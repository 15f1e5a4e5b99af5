// What the cluster subsystem provides to the others (service-refs.ts names it).
export interface ClusterService {
  readonly nodeId: string;
  isLeader(): boolean;
  /** Called on every change of leadership; returns an unsubscribe. */
  onLeaderChange(handler: (leader: boolean) => void): () => void;
}
