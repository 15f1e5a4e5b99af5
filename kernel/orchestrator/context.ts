// What every orchestrator subsystem is handed at start. Subsystems register their routes,
// WebSocket handlers and background loops on it; what they need from each other comes through
// the typed deps (service-refs.ts), and what must happen at stop through `deps.onStop`.
import type { Logger } from 'pino';
import type { Tracing } from '../../core/tracing/index.ts';
import type { SvcConfig } from '../../schemas/config.ts';
import type { PluginHost } from '../../core/plugins/index.ts';
import type { Subsystem as WiredSubsystem } from '../../core/wiring/index.ts';
import type { MasterKeys } from '../services/crypto/master-keys.ts';
import type { ConfigHolder } from './config/holder.ts';
import type { DatabasePool } from '../services/db/index.ts';
import type { SvcHttpServer } from '../services/http/index.ts';
import type { SvcMetrics } from '../services/metrics.ts';

export interface OrchestratorContext {
  /**
   * The running config: a getter on `configHolder`, so it is the current snapshot at each read. Read
   * it when acting (not once at start) for a field a reload may change (docs/config.md).
   */
  readonly config: SvcConfig;
  /** The swappable config snapshot a reload replaces (config/holder.ts). */
  readonly configHolder: ConfigHolder;
  readonly logger: Logger;
  readonly metrics: SvcMetrics;
  readonly db: DatabasePool;
  /** Connection URL of `db` (for the raw LISTEN client and child processes). */
  readonly databaseUrl: string;
  readonly host: PluginHost;
  readonly http: SvcHttpServer;
  readonly masterKeys: MasterKeys;
  /** This node's id (`instance.id`): the `orchestrator_id` claim, lease owner, agent owner. */
  readonly nodeId: string;
  /** `{base_url}`: where agents and developers reach this orchestrator. Known once listening. */
  publicUrl(): string;
  /** This node's own address (its listener, not a load balancer's): where other nodes and svc-admin reach it. */
  nodeUrl(): string;
  /** Spans of deliveries and runs (OTEL_*, docs/tracing.md); absent or NO_TRACING when off. */
  readonly tracing?: Tracing;
}

/**
 * A kernel subsystem (ingest, dispatch, identity, …): declares the services it provides and
 * needs; the app starts subsystems in the order that graph gives (core/wiring).
 */
export type Subsystem = WiredSubsystem<OrchestratorContext>;
