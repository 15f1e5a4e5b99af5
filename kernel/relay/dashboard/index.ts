// Dashboard actions and developer-CLI run routes of the relay, forwarded to orchestrators.
import type { Logger } from 'pino';
import type { DatabasePool } from '../../services/db/index.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import type { OrchestratorConnection, OrchestratorPool } from '../orchestrator-pool.ts';
import { DashboardBroker, type BrokerResponse } from './broker.ts';
import { registerDashboardRoutes } from './routes.ts';
import { registerDashboardUi } from './ui/index.ts';
import { AuditForwarder } from '../audit/forward.ts';

export { DashboardBroker, type BrokerRequest, type BrokerResponse } from './broker.ts';
export { authorize, identify, type Caller } from './auth.ts';
export { registerDashboardRoutes } from './routes.ts';

/** spec Limits names none; long enough for a re-run's lock fetch from a forge. */
export const DASHBOARD_TIMEOUT_MS = 15_000;

export interface Dashboard {
  /** The orchestrator endpoint's hook for `*.response` frames. */
  handleResponse(connection: OrchestratorConnection, message: BrokerResponse): void;
  register(app: SvcHttpServer): void;
  /** An orchestrator of `orgId` finished hello: the people directory and waiting audit records go to it. */
  connected(orgId: string): void;
  /** The audit outbox forwarder (kernel/relay/audit). */
  readonly audit: AuditForwarder;
  close(): void;
}

export interface DashboardOptions {
  db: DatabasePool;
  pool: OrchestratorPool;
  logger: Logger;
  timeoutMs?: number;
  /** The kind of a configured sign-in provider id (people directory); the id when unknown. */
  providerKind?: (providerId: string) => string;
  /** Audit outbox pass interval (default 2 s; 0: after writes and connects only). */
  auditIntervalMs?: number;
}

export function createDashboard(options: DashboardOptions): Dashboard {
  const logger = options.logger.child({ component: 'dashboard' });
  const broker = new DashboardBroker({ pool: options.pool, logger, timeoutMs: options.timeoutMs ?? DASHBOARD_TIMEOUT_MS });
  const audit = new AuditForwarder({
    db: options.db,
    broker,
    pool: options.pool,
    logger: options.logger.child({ component: 'audit-forward' }),
    providerKind: options.providerKind ?? ((id) => id),
    ...(options.auditIntervalMs === undefined ? {} : { intervalMs: options.auditIntervalMs }),
  });
  let stopUi: (() => void) | undefined;
  return {
    audit,
    connected: (orgId) => void audit.connected(orgId),
    handleResponse: (connection, message) => void broker.handleResponse(connection, message),
    register: (app) => {
      registerDashboardRoutes(app, { db: options.db, broker, logger, pool: options.pool });
      // The web dashboard's pages (ui/): same broker, same callers.
      stopUi = registerDashboardUi(app, { db: options.db, broker, logger });
    },
    close: () => {
      stopUi?.();
      void audit.stop();
      broker.close();
    },
  };
}
