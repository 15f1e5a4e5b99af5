// What every orchestrator subsystem is handed at start. Subsystems register their routes,
// WebSocket handlers and background loops on it and add what must happen at stop.
import type { Logger } from 'pino';
import type { SvcConfig } from '../../schemas/config.ts';
import type { PluginHost } from '../../core/plugins/index.ts';
import type { MasterKeys } from '../services/crypto/master-keys.ts';
import type { DatabasePool } from '../services/db/index.ts';
import type { SvcHttpServer } from '../services/http/index.ts';
import type { SvcMetrics } from '../services/metrics.ts';

export interface OrchestratorContext {
  readonly config: SvcConfig;
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
  /** Run at stop, in reverse order of registration. */
  onStop(fn: () => Promise<void> | void): void;
}

/** A kernel subsystem (ingest, dispatch, identity, …): wired in order at start. */
export interface Subsystem {
  readonly name: string;
  start(ctx: OrchestratorContext): Promise<void>;
}
