// `registries` and `installEnv` in `svc run <event> --local`: the run installs `.svc/` once for
// every matched workflow, so their declarations are merged (a scope declared twice: the first
// workflow's registry), with the values from the local secrets (`.svc/.secrets`, `.env.local`,
// `--env`): `<context>:<KEY>` as written, else the bare `KEY`. A secret missing there is left
// without its value and the install refuses, naming it (agent/jobs/private-install.ts), as an
// agent does for a secret not released.
import type { LockWorkflow } from '../../schemas/lock.ts';
import type { JobInstall } from '../../agent/jobs/private-install.ts';

export function localInstall(entries: ReadonlyArray<Pick<LockWorkflow, 'registries' | 'installEnv'>>, secrets: Readonly<Record<string, string>>): JobInstall | undefined {
  const valueOf = (ref: string): string | undefined => {
    const value = secrets[ref] ?? secrets[ref.slice(ref.indexOf(':') + 1)];
    return value === '' ? undefined : value;
  };
  const registries = new Map<string, JobInstall['registries'][number]>();
  const env = new Map<string, JobInstall['env'][number]>();
  for (const entry of entries) {
    for (const r of entry.registries ?? []) {
      const token = valueOf(r.tokenSecret);
      if (!registries.has(r.scope ?? '')) registries.set(r.scope ?? '', { url: r.url, ...(r.scope === undefined ? {} : { scope: r.scope }), alwaysAuth: r.alwaysAuth, tokenSecret: r.tokenSecret, ...(token === undefined ? {} : { token }) });
    }
    for (const ref of entry.installEnv ?? []) {
      const name = ref.slice(ref.indexOf(':') + 1);
      const value = valueOf(ref);
      if (!env.has(name)) env.set(name, { name, secret: ref, ...(value === undefined ? {} : { value }) });
    }
  }
  return registries.size + env.size === 0 ? undefined : { registries: [...registries.values()], env: [...env.values()] };
}
