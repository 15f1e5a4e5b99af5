// Where the bins keep Node's module compile cache (bin/launch.ts turns it on; docs/cli.md).
import { lstatSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/**
 * A compile cache directory only this user can write. Node's default, `<tmpdir>/node-compile-cache`,
 * is one directory for every user of the machine: whoever makes it first owns it (the others
 * then run uncached), and a user who can write into another's cache can plant code that user
 * runs. So: `$XDG_CACHE_HOME/svc/compile-cache` (or `~/.cache/svc/compile-cache`), else
 * `<tmpdir>/svc-compile-cache-<uid>`; either only when it is a real directory (not a link) owned
 * by this user and writable by nobody else. `undefined`: no safe place, the bin runs uncached.
 */
export function compileCacheDir(env: NodeJS.ProcessEnv, tmp: string = tmpdir(), uid: number | undefined = process.getuid?.()): string | undefined {
  if (uid === undefined) return join(tmp, 'svc-compile-cache');
  const home = env['XDG_CACHE_HOME'] || (env['HOME'] ? join(env['HOME'], '.cache') : undefined);
  const candidates = [...(home !== undefined && isAbsolute(home) ? [join(home, 'svc', 'compile-cache')] : []), join(tmp, `svc-compile-cache-${uid}`)];
  for (const dir of candidates) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const info = lstatSync(dir);
      if (info.isDirectory() && info.uid === uid && (info.mode & 0o022) === 0) return dir;
    } catch {
      // Not writable here (a read-only home, a service user without one): the next candidate.
    }
  }
  return undefined;
}
