// `jobConfig.install`: the lock entry's `registries` and `installEnv` with their secret values,
// taken from the secrets already released to the job (secrets/release.ts: the workflow declares
// each context — compile requires it at workflow level — and the context's rules passed). The
// agent gives them to the dependency install alone (agent/jobs/private-install.ts).
import { Value } from 'typebox/value';
import { LockRegistry } from '../../../schemas/lock.ts';
import type { JobInstall } from '../../../schemas/wire/agent.ts';

interface InstallDeclarations {
  registries: LockRegistry[];
  installEnv: string[];
}

function declarationsOf(lockEntry: unknown): InstallDeclarations {
  const entry = (typeof lockEntry === 'object' && lockEntry !== null ? lockEntry : {}) as { registries?: unknown; installEnv?: unknown };
  const registries = Array.isArray(entry.registries) ? entry.registries.filter((r): r is LockRegistry => Value.Check(LockRegistry, r)) : [];
  const installEnv = Array.isArray(entry.installEnv) ? entry.installEnv.filter((r): r is string => typeof r === 'string' && /^[^:]+:.+$/.test(r)) : [];
  return { registries, installEnv };
}

/**
 * True when the workflow installs with secrets: its dependencies are never read from or written
 * to the shared dependency cache (keyed by the lockfile alone, across organizations), so a
 * tarball fetched with one workflow's registry token cannot reach a run without that token.
 */
export function installsWithSecrets(lockEntry: unknown): boolean {
  const d = declarationsOf(lockEntry);
  return d.registries.length + d.installEnv.length > 0;
}

/**
 * The install block of the dispatch, or undefined when the workflow declares neither. A secret
 * is looked up as released (`<context>:<KEY>`; a `svc run remote` context mapped to its
 * orchestrator name); one not released is sent without its value and the agent refuses to
 * install, naming it.
 */
export function installConfigOf(lockEntry: unknown, secrets: Readonly<Record<string, string>> | undefined, contextMap?: Readonly<Record<string, string>>): JobInstall | undefined {
  const d = declarationsOf(lockEntry);
  if (d.registries.length + d.installEnv.length === 0) return undefined;
  const valueOf = (ref: string): string | undefined => {
    const colon = ref.indexOf(':');
    const context = ref.slice(0, colon);
    const key = ref.slice(colon + 1);
    const mapped = contextMap?.[context];
    const value = secrets?.[ref] ?? (mapped === undefined ? undefined : secrets?.[`${mapped}:${key}`]);
    return value === '' ? undefined : value;
  };
  return {
    registries: d.registries.map((r) => {
      const token = valueOf(r.tokenSecret);
      return { url: r.url, ...(r.scope === undefined ? {} : { scope: r.scope }), alwaysAuth: r.alwaysAuth, tokenSecret: r.tokenSecret, ...(token === undefined ? {} : { token }) };
    }),
    env: d.installEnv.map((ref) => {
      const value = valueOf(ref);
      return { name: ref.slice(ref.indexOf(':') + 1), secret: ref, ...(value === undefined ? {} : { value }) };
    }),
  };
}
