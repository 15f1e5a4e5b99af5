// The admin-auth subsystem: provides the one admin authentication every operator admin route
// uses (`deps.get(adminAuthRef).requireScope('<scope>')`, require-scope.ts). A subsystem that
// serves admin routes lists `adminAuthRef` in its needs.
import { provide } from '../../../core/wiring/index.ts';
import type { Subsystem } from '../context.ts';
import { adminAuthRef } from '../service-refs.ts';
import { createAdminAuth } from './require-scope.ts';

export const adminAuthSubsystem: Subsystem = {
  id: 'admin-auth',
  provides: [adminAuthRef],
  async start(ctx) {
    const auth = createAdminAuth({ pool: ctx.db, bootstrapToken: () => ctx.config.secrets.bootstrapAdminToken, logger: ctx.logger.child({ subsystem: 'admin-auth' }) });
    return [provide(adminAuthRef, auth)];
  },
};
