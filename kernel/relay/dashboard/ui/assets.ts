// The dashboard's script and stylesheet, read once from the package (dist/…/ui/browser, built
// by scripts/dashboard-assets.ts) and served by the relay itself, cacheable for an hour.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { SvcHttpServer } from '../../../services/http/index.ts';
import { UI_SCRIPT_PATH, UI_STYLESHEET_PATH } from './frame.ts';

/** Next to this module once built; from the source tree, the built copy under dist/. */
function assetPath(name: string): string | undefined {
  const candidates = [new URL(`./browser/${name}`, import.meta.url), new URL(`../../../../dist/kernel/relay/dashboard/ui/browser/${name}`, import.meta.url)];
  for (const url of candidates) {
    const path = fileURLToPath(url);
    if (existsSync(path) && (name.endsWith('.css') || !path.endsWith('.ts'))) return path;
  }
  return undefined;
}

function load(name: string): Buffer | undefined {
  const path = assetPath(name);
  return path === undefined ? undefined : readFileSync(path);
}

export function registerUiAssets(app: SvcHttpServer): void {
  const script = load('dashboard.js');
  const stylesheet = load('dashboard.css');
  app.get(UI_SCRIPT_PATH, async (_request, reply) => {
    if (script === undefined) return reply.code(404).type('text/plain; charset=utf-8').send('the dashboard script is not built: run "npm run build"\n');
    return reply.header('cache-control', 'public, max-age=3600').header('x-content-type-options', 'nosniff').type('text/javascript; charset=utf-8').send(script);
  });
  // Browsers ask for it on every page; no icon of our own yet, and no 404 in their consoles.
  app.get('/favicon.ico', async (_request, reply) => reply.code(204).header('cache-control', 'public, max-age=86400').send());
  app.get(UI_STYLESHEET_PATH, async (_request, reply) => {
    if (stylesheet === undefined) return reply.code(404).type('text/plain; charset=utf-8').send('the dashboard stylesheet is missing\n');
    return reply.header('cache-control', 'public, max-age=3600').header('x-content-type-options', 'nosniff').type('text/css; charset=utf-8').send(stylesheet);
  });
}
