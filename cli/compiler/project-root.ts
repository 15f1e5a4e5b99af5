// Which directory the developer commands work on: the nearest ancestor of the working directory
// that holds a `.svc/` directory (like git finding `.git/`), so `svc compile` works from any
// subdirectory. Without one, the working directory itself (commands then say "run svc init").
import { statSync } from 'node:fs';
import path from 'node:path';

export const SVC_DIR = '.svc';

export function findProjectRoot(cwd: string = process.cwd()): { root: string; found: boolean } {
  let dir = path.resolve(cwd);
  for (let i = 0; i < 256; i++) {
    try {
      if (statSync(path.join(dir, SVC_DIR)).isDirectory()) return { root: dir, found: true };
    } catch {
      // not here: keep walking up
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return { root: path.resolve(cwd), found: false };
}
