// The web dashboard (docs/dashboard.md): server-rendered pages under /ui with a small script of
// our own, over the relay's browser sessions and the dashboard broker.
import type { Logger } from 'pino';
import type { DatabasePool } from '../../../services/db/index.ts';
import type { SvcHttpServer } from '../../../services/http/index.ts';
import { acceptForms } from '../../sessions/index.ts';
import type { DashboardBroker } from '../broker.ts';
import { registerUiAssets } from './assets.ts';
import { registerUiRoutes } from './routes.ts';

/** Registers the pages in their own scope (form bodies parsed there only); returns a stopper that ends open streams. */
export function registerDashboardUi(app: SvcHttpServer, options: { db: DatabasePool; broker: DashboardBroker; logger: Logger }): () => void {
  const stop = new AbortController();
  void app.register(async (scope) => {
    acceptForms(scope);
    registerUiAssets(scope);
    registerUiRoutes(scope, { ...options, signal: stop.signal });
  });
  // Open event streams would hold the server's close up: end them first.
  app.addHook('preClose', async () => stop.abort());
  return () => stop.abort();
}
