// Checkout credentials for dispatched jobs: the run's source, opened with the master key, asks
// its provider for short-lived credentials (a GitHub installation token, a git deploy token).
// Registered on the dispatch service (a declared need); without a source the dispatcher falls
// back to the event's clone URL with no credential.
import type { NormalizedEvent } from '../../../schemas/event.ts';
import type { RepositoryRef } from '../../../core/extension-points/provider.ts';
import type { OrchestratorContext, Subsystem } from '../context.ts';
import type { SourceAuthResolver } from '../dispatch/index.ts';
import { dispatchServiceRef } from '../service-refs.ts';
import { repositoryOf } from '../ingest/steps/repository.ts';
import { getSourceRow, openSource } from './store.ts';

export function checkoutAuthResolver(ctx: OrchestratorContext): SourceAuthResolver {
  return async ({ row, repository }) => {
    if (row.source_id === null) return null;
    const sourceRow = await getSourceRow(ctx.db, row.source_id);
    if (sourceRow === null || !ctx.host.has('provider', sourceRow.provider_kind)) return null;
    const provider = ctx.host.get('provider', sourceRow.provider_kind);
    const opened = openSource(sourceRow, ctx.masterKeys.all);
    const fromEvent = repository === row.repository ? repositoryOf(row.event as NormalizedEvent) : null;
    const ref: RepositoryRef = fromEvent ?? { id: repository, fullName: repository };
    const credentials = await provider.checkoutCredentials({
      source: { id: opened.id, orgId: opened.orgId, routingKey: opened.routingKey, settings: opened.settings as Record<string, unknown>, credentials: opened.credentials },
      repository: ref,
    });
    return {
      cloneUrl: credentials.cloneUrl,
      ...(credentials.token === undefined ? {} : { token: credentials.token }),
      ...(credentials.username === undefined ? {} : { username: credentials.username }),
    };
  };
}

export const checkoutAuthSubsystem: Subsystem = {
  id: 'checkout-auth',
  needs: [dispatchServiceRef],
  async start(ctx, deps) {
    deps.get(dispatchServiceRef).setSourceAuthResolver(checkoutAuthResolver(ctx));
  },
};
