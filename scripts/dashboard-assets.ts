// The dashboard's browser code (kernel/relay/dashboard/ui/browser: plain TypeScript against the
// DOM, type-checked by its own tsconfig) bundled into one ES module, with the stylesheet next to
// it, under dist/ — the relay serves both from there (no CDN).
import { copyFileSync, mkdirSync } from 'node:fs';
import { build } from 'esbuild';

const from = 'kernel/relay/dashboard/ui/browser';
const to = `dist/${from}`;
mkdirSync(to, { recursive: true });
await build({
  entryPoints: [`${from}/dashboard.ts`],
  outfile: `${to}/dashboard.js`,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['chrome110', 'firefox115', 'safari16'],
  minify: true,
  sourcemap: false,
  logLevel: 'warning',
});
copyFileSync(`${from}/dashboard.css`, `${to}/dashboard.css`);
process.stdout.write('dashboard assets: dashboard.js, dashboard.css\n');
