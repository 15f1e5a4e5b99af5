// The audit subsystem (docs/audit.md): serves `GET /api/v1/admin/audit`, stores the records the
// relay sends over the link (runs/api relay handlers call recordAudit), and runs the retention
// pass on every node (`audit.retentionDays`; a DELETE of rows past the cut-off is idempotent, so
// nodes need not agree on who purges).
import { messageOf } from '../../../core/errors.ts';
import type { Subsystem } from '../context.ts';
import { adminAuthRef } from '../service-refs.ts';
import { auditRoutes } from './routes.ts';
import { purgeAudit } from './store.ts';

export interface AuditTuning {
  /** Retention pass interval; default one hour. 0 disables the timer (tests call purgeAudit). */
  purgeMs?: number;
}

export function createAuditSubsystem(tuning: AuditTuning = {}): Subsystem {
  return {
    id: 'audit',
    needs: [adminAuthRef],
    async start(ctx, deps) {
      const logger = ctx.logger.child({ subsystem: 'audit' });
      await ctx.http.register(auditRoutes({ pool: ctx.db, auth: deps.get(adminAuthRef) }));
      const purgeMs = tuning.purgeMs ?? 3_600_000;
      if (purgeMs <= 0) return;
      const days = ctx.config.audit.retentionDays;
      let busy = false;
      const pass = (): void => {
        if (busy) return;
        busy = true;
        purgeAudit(ctx.db, days)
          .then((purged) => {
            if (purged > 0) logger.info({ purged, retentionDays: days }, 'audit records past retention purged');
          })
          .catch((error: unknown) => logger.warn({ err: messageOf(error) }, 'audit retention pass failed'))
          .finally(() => {
            busy = false;
          });
      };
      const timer = setInterval(pass, purgeMs);
      timer.unref();
      deps.onStop(() => clearInterval(timer));
    },
  };
}

export const auditSubsystem: Subsystem = createAuditSubsystem();
