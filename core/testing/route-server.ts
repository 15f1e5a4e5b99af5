// A real HTTP listener for plugins whose routes the kernel serves (filesystem storage serves
// its pre-signed URLs on the orchestrator). The port is known before the plugin is created (its
// config needs the URL); the routes are mounted once the plugin exists.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fastify, { type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import type { StorageHarness } from '../extension-points/contracts/storage.ts';
import type { ContractScope } from '../extension-points/contracts/types.ts';

export interface RouteServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  mount(routes: FastifyPluginAsync): Promise<void>;
  close(): Promise<void>;
}

export async function startRouteServer(): Promise<RouteServer> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  const server = createServer((req, res) => {
    if (handler !== null) return handler(req, res);
    res.writeHead(503, { 'content-type': 'text/plain' }).end('routes not mounted yet');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let app: FastifyInstance | null = null;
  return {
    url: `http://127.0.0.1:${port}`,
    async mount(routes) {
      if (app !== null) throw new Error('routes are mounted already');
      const mounted = fastify({
        serverFactory: (fastifyHandler) => {
          handler = fastifyHandler;
          return server;
        },
      });
      await mounted.register(routes);
      await mounted.ready();
      app = mounted;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app?.close();
    },
  };
}

/**
 * A storage harness whose plugin gets a fresh directory and a live listener per contract point:
 * `slice` turns them into the plugin's config; routes the storage brings are mounted after create.
 */
export function servedStorageHarness(
  slice: (dir: string, publicBaseUrl: string) => unknown,
  extra: Omit<StorageHarness, 'config' | 'prepare'> = {},
): StorageHarness {
  const servers = new WeakMap<ContractScope, RouteServer>();
  return {
    ...extra,
    async config(scope) {
      const server = await startRouteServer();
      scope.teardown(() => server.close());
      servers.set(scope, server);
      return slice(await scope.tempDir(), server.url);
    },
    async prepare(storage, scope) {
      const server = servers.get(scope);
      if (server !== undefined && storage.httpRoutes !== undefined) await server.mount(storage.httpRoutes);
    },
  };
}
