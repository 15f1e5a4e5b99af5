// The svc package's own root folder and version, for `svc diagnostics`, `svc docs` and the
// orchestrator's hello (`svc orchestrators` shows the version). Sources run from the repository
// (core/….ts) and the build from dist/ (dist/core/….js): one folder deeper.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export function packageRoot(): string {
  const up = import.meta.url.endsWith('.ts') ? '../' : '../../';
  return fileURLToPath(new URL(up, import.meta.url));
}

let version: string | undefined;

/** `version` of the package's package.json; `unknown` when it cannot be read. */
export function packageVersion(): string {
  if (version !== undefined) return version;
  try {
    const pkg = JSON.parse(readFileSync(`${packageRoot()}package.json`, 'utf8')) as { version?: unknown };
    version = typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    version = 'unknown';
  }
  return version;
}
