// tsc emits only JavaScript; SQL migrations travel next to the compiled code that reads them.
import { cpSync, existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const roots = ['kernel', 'plugins'];
function walk(dir: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (!statSync(path).isDirectory()) continue;
    if (name === 'migrations') cpSync(path, join('dist', path), { recursive: true });
    else walk(path);
  }
}
for (const root of roots) if (existsSync(root)) walk(root);
