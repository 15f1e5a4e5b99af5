// Starts a role's tracing from OTEL_* (docs/tracing.md): the no-op when off, the SDK (loaded only
// then) when on. Everything else of the interface lives in api.ts, which otel.ts shares.
import { NO_TRACING, tracingSettings, type Tracing } from './api.ts';

export * from './api.ts';

/**
 * The tracing of one server role. Off: NO_TRACING, nothing imported. On: the SDK is imported here
 * (lazily: a server without tracing never loads it) with its own provider, so roles sharing a
 * process (svc dev, tests) keep their own service names.
 */
export async function startTracing(env: NodeJS.ProcessEnv, defaultServiceName: string): Promise<Tracing> {
  const settings = tracingSettings(env, defaultServiceName);
  if (settings === null) return NO_TRACING;
  const { createOtelTracing } = await import('./otel.ts');
  return createOtelTracing(settings);
}
