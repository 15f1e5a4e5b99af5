// `process` sandbox: the step runner is a child process of the agent in its own process group.
// When bubblewrap is present (or required by config) the child is confined: the host file
// system read-only, only the job workspace and its scratch directory writable, fresh
// namespaces. Without bwrap the job is a plain child process (bare metal) and can write
// wherever the agent's user can: operators choose `bwrap: 'always'` to refuse that.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Type, type Static } from 'typebox';
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import type { SandboxAvailability, SandboxExtensionPoint, SandboxProcess, Workspace } from '../../../core/extension-points/sandbox.ts';
import { InputError } from '../../../core/errors.ts';
import { isHostProcess, killHostProcess, spawnHostProcess } from '../shared/child.ts';
import { findExecutable } from '../shared/which.ts';
import { realpathSync } from 'node:fs';
import { bwrapArgv } from './bwrap.ts';

/** Each path and, when it is a symlink, its target (the Node binary often is one). */
function readPathsOf(paths: readonly string[] | undefined): string[] {
  const out = new Set<string>();
  for (const p of paths ?? []) {
    out.add(p);
    try {
      out.add(realpathSync(p));
    } catch {
      // a missing path is skipped by --ro-bind-try
    }
  }
  return [...out];
}

export const ProcessSandboxConfig = Type.Object(
  {
    /** `auto`: confine with bwrap when it is installed; `always`: refuse to run without it; `never`. */
    bwrap: Type.Union([Type.Literal('auto'), Type.Literal('always'), Type.Literal('never')], { default: 'auto' }),
    /** Keep the host network inside bwrap (git, package registries). */
    network: Type.Boolean({ default: true }),
    /** Where scratch directories are made; default the OS temp directory. */
    tmpRoot: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);
export type ProcessSandboxConfig = Static<typeof ProcessSandboxConfig>;

export function createProcessSandbox(config: ProcessSandboxConfig): SandboxExtensionPoint & { confined(): Promise<boolean> } {
  let bwrapPath: Promise<string | null> | undefined;
  const bwrap = (): Promise<string | null> => {
    if (config.bwrap === 'never') return Promise.resolve(null);
    bwrapPath ??= findExecutable('bwrap');
    return bwrapPath;
  };
  return {
    async available(): Promise<SandboxAvailability> {
      if (config.bwrap === 'always' && (await bwrap()) === null) {
        return { available: false, missing: 'bwrap', message: 'the process sandbox is configured to require bubblewrap (bwrap), which is not installed; install the bubblewrap package' };
      }
      return { available: true };
    },
    async confined() {
      return (await bwrap()) !== null;
    },
    async prepareWorkspace(request): Promise<Workspace> {
      if (request.sourceDir === undefined) throw new InputError('SVC_ERR_SANDBOX_WORKSPACE', 'the process sandbox needs the job source directory');
      const tmpDir = await mkdtemp(join(config.tmpRoot ?? tmpdir(), 'svc-job-tmp-'));
      return { dir: resolve(request.sourceDir), tmpDir };
    },
    async spawn(request): Promise<SandboxProcess> {
      const path = await bwrap();
      if (path === null && config.bwrap === 'always') {
        throw new InputError('SVC_ERR_SANDBOX_UNAVAILABLE', 'bubblewrap (bwrap) is required by the process sandbox configuration but is not installed');
      }
      const argv =
        path === null
          ? request.argv
          : bwrapArgv({ bwrap: path, workspace: request.workspace.dir, tmpDir: request.workspace.tmpDir ?? request.workspace.dir, network: config.network, cwd: request.cwd, argv: request.argv, readPaths: readPathsOf(request.readPaths) });
      return spawnHostProcess({ argv, env: request.env, cwd: request.cwd, ...(request.ipc ? { ipc: true } : {}) });
    },
    async kill(proc, options) {
      if (!isHostProcess(proc)) throw new InputError('SVC_ERR_SANDBOX_FOREIGN_PROCESS', 'this process was not started by the process sandbox');
      return killHostProcess(proc, options.graceMs);
    },
    async releaseWorkspace(workspace) {
      if (workspace.tmpDir !== undefined) await rm(workspace.tmpDir, { recursive: true, force: true });
    },
  };
}

export const processSandbox = definePlugin({
  id: 'process',
  kind: 'sandbox',
  version: '0.9.0',
  kernelRange: '^0.9.0',
  description: 'Step runner as a child process group, confined with bubblewrap when available',
  configSchema: ProcessSandboxConfig,
  create: ({ config }) => createProcessSandbox(config),
});

export default processSandbox;
