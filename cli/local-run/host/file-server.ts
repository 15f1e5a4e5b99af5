// Loopback HTTP for a local run: serves the source and dependency tarballs to the in-process
// agent exactly as pre-signed storage URLs do remotely (the agent downloads, hashes, verifies).
// GET only, 127.0.0.1 only, and every URL carries a random token so other local users cannot
// guess it.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';

export interface LocalFileServer {
  /** Serves `file` at a new URL. */
  serve(file: string): string;
  close(): Promise<void>;
}

export async function startLocalFileServer(): Promise<LocalFileServer> {
  const token = randomBytes(16).toString('hex');
  const files = new Map<string, string>();
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const file = url.searchParams.get('token') === token ? files.get(url.pathname.slice(1)) : undefined;
    if (req.method !== 'GET' || file === undefined) {
      res.writeHead(req.method !== 'GET' ? 405 : 404).end();
      return;
    }
    stat(file).then(
      (info) => {
        res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': info.size });
        createReadStream(file).on('error', () => res.destroy()).pipe(res);
      },
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  let n = 0;
  return {
    serve(file) {
      const name = `f${++n}.tar.gz`;
      files.set(name, file);
      return `http://127.0.0.1:${port}/${name}?token=${token}`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
