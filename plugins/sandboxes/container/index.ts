// `container` sandbox: the step runner runs inside the job's container image (podman, or docker
// when its engine is reachable). The job workspace and scratch directory are bind-mounted
// read-write at the same paths as on the host, the Node binary and the svc package read-only at
// the same paths, so the runner needs nothing from the image but a libc. The IPC channel is the
// agent's own descriptor handed into the container (podman: `--preserve-fds 1`, NODE_CHANNEL_FD=3)
// or, where no descriptor can cross (docker), a unix socket in the bind-mounted scratch directory
// that the runner connects to (socket-ipc.ts; `ipcTransport`).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execa } from 'execa';
import { Type, type Static } from 'typebox';
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import type { SandboxAvailability, SandboxExit, SandboxExtensionPoint, SandboxProcess, Workspace } from '../../../core/extension-points/sandbox.ts';
import { InputError, UnavailableError } from '../../../core/errors.ts';
import { isHostProcess, killHostProcess, spawnHostProcess } from '../shared/child.ts';
import { RUNNER_IPC_SOCKET_ENV } from '../../../core/ipc/framed-json.ts';
import { containerRunFlags, describeContainerOptionProblem, parseContainerOptions } from '../../../core/container-options.ts';
import { DOCKER_RUN_FLAGS, PODMAN_RUN_FLAGS, detectRuntime, dockerUserFlags, runtimeEnv, type DetectedRuntime } from './runtime.ts';
import { listenRunnerSocket, type RunnerSocket } from './socket-ipc.ts';

export const ContainerSandboxConfig = Type.Object(
  {
    runtime: Type.Union([Type.Literal('auto'), Type.Literal('podman'), Type.Literal('docker')], { default: 'auto' }),
    /** Give the container the default network (off: `--network none`). */
    network: Type.Boolean({ default: true }),
    /**
     * How the step runner's IPC reaches it: `fd` hands the agent's Node IPC descriptor in (podman
     * only), `socket` a unix socket in the scratch dir (any runtime), `auto` fd on podman, socket on docker.
     */
    ipcTransport: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('fd'), Type.Literal('socket')], { default: 'auto' })),
    tmpRoot: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);
export type ContainerSandboxConfig = Static<typeof ContainerSandboxConfig>;

const IMAGE = /^[A-Za-z0-9][A-Za-z0-9._\/:@-]{0,254}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function createContainerSandbox(config: ContainerSandboxConfig): SandboxExtensionPoint {
  const transport = config.ipcTransport ?? 'auto';
  if (config.runtime === 'docker' && transport === 'fd') {
    throw new UnavailableError('SVC_ERR_SANDBOX_IPC', "the step runner's IPC channel cannot be set up: docker cannot hand a descriptor into a container (no --preserve-fds); use ipcTransport 'socket' or 'auto'");
  }
  let detected: ReturnType<typeof detectRuntime> | undefined;
  const runtime = () => (detected ??= detectRuntime(config.runtime));
  const names = new WeakMap<SandboxProcess, { runtime: DetectedRuntime; name: string }>();

  const requireRuntime = async (): Promise<DetectedRuntime> => {
    const r = await runtime();
    if ('missing' in r) throw new UnavailableError('SVC_ERR_SANDBOX_UNAVAILABLE', `container job cannot start: ${r.message}`);
    return r;
  };

  return {
    async available(): Promise<SandboxAvailability> {
      const r = await runtime();
      return 'missing' in r ? { available: false, missing: r.missing, message: r.message } : { available: true };
    },
    async prepareWorkspace(request): Promise<Workspace> {
      if (request.sourceDir === undefined) throw new InputError('SVC_ERR_SANDBOX_WORKSPACE', 'the container sandbox needs the job source directory');
      const tmpDir = await mkdtemp(join(config.tmpRoot ?? tmpdir(), 'svc-job-tmp-'));
      return { dir: resolve(request.sourceDir), tmpDir };
    },
    async spawn(request): Promise<SandboxProcess> {
      const rt = await requireRuntime();
      const image = request.image;
      if (image === undefined || !IMAGE.test(image)) throw new InputError('SVC_ERR_SANDBOX_IMAGE', `container image ${JSON.stringify(image ?? '')} is not a valid image reference`);
      if (request.ipc && rt.kind === 'docker' && transport === 'fd') {
        throw new UnavailableError('SVC_ERR_SANDBOX_IPC', "the step runner's IPC channel cannot be set up: docker cannot hand a descriptor into a container (no --preserve-fds); use ipcTransport 'socket' or 'auto'");
      }
      for (const key of Object.keys(request.env)) if (!ENV_NAME.test(key)) throw new InputError('SVC_ERR_SANDBOX_ENV', `environment name ${JSON.stringify(key)} is not valid`);
      const parsed = parseContainerOptions(request.containerOptions ?? []);
      if (!parsed.ok) throw new InputError('SVC_ERR_SANDBOX_CONTAINER_OPTION', describeContainerOptionProblem(parsed.problem), { details: { ...parsed.problem } });
      const options = parsed.options;
      if (options.network === 'bridge' && !config.network) {
        throw new InputError('SVC_ERR_SANDBOX_CONTAINER_OPTION', "container.options asks for --network bridge, but this agent's container sandbox runs jobs without a network (plugin config network: false)");
      }
      const network = options.network ?? (config.network ? undefined : 'none');
      const name = `svc-job-${request.workspace.dir.split('/').slice(-2, -1)[0]?.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 60) ?? 'job'}-${randomBytes(4).toString('hex')}`;
      const mounts: string[] = [];
      const bind = (path: string, mode: 'ro' | 'rw') => mounts.push('-v', `${path}:${path}:${mode}`);
      bind(request.workspace.dir, 'rw');
      if (request.workspace.tmpDir !== undefined) bind(request.workspace.tmpDir, 'rw');
      for (const p of request.readPaths ?? []) if (!p.startsWith(request.workspace.dir)) bind(p, 'ro');
      const useSocket = request.ipc === true && (transport === 'socket' || (transport === 'auto' && rt.kind === 'docker'));
      if (useSocket && request.workspace.tmpDir === undefined) throw new InputError('SVC_ERR_SANDBOX_WORKSPACE', 'the container sandbox needs the job scratch directory for the IPC socket');
      const socket: RunnerSocket | undefined = useSocket ? await listenRunnerSocket(request.workspace.tmpDir!) : undefined;
      // Node sets the channel variables in the runtime's environment when it hands over the
      // descriptor; they are the only ones the container copies from it.
      const ipcFlags = !request.ipc || useSocket ? [] : ['--preserve-fds', '1', '-e', 'NODE_CHANNEL_FD', '-e', 'NODE_CHANNEL_SERIALIZATION_MODE'];
      const jobEnv = { ...request.env, ...(socket !== undefined ? { [RUNNER_IPC_SOCKET_ENV]: socket.path } : {}), ...Object.fromEntries(options.env) };
      const { dir: envDir, flags: envFlags } = await writeEnvFile(config.tmpRoot ?? tmpdir(), jobEnv).catch(async (error: unknown) => {
        await socket?.close();
        throw error;
      });
      const argv = [
        rt.path,
        'run',
        '--rm',
        '--name',
        name,
        // podman copies the runtime's proxy variables into the container unless told not to: the
        // job's variables are the operator's pass-through policy, not the agent's environment.
        ...(rt.kind === 'podman' ? [...PODMAN_RUN_FLAGS, '--http-proxy=false'] : [...DOCKER_RUN_FLAGS, ...dockerUserFlags()]),
        ...(network === undefined ? [] : [`--network=${network}`]),
        ...containerRunFlags(options),
        ...mounts,
        ...envFlags,
        ...ipcFlags,
        '-w',
        request.cwd,
        '--',
        image,
        ...request.argv,
      ];
      let proc;
      try {
        proc = spawnHostProcess({
          argv,
          env: { ...runtimeEnv(), ...(request.ipc && socket === undefined ? { NODE_CHANNEL_SERIALIZATION_MODE: 'json' } : {}) },
          cwd: request.workspace.dir,
          ...(request.ipc && socket === undefined ? { ipc: true } : {}),
        });
      } catch (error) {
        await socket?.close();
        await rm(envDir, { recursive: true, force: true });
        throw error;
      }
      // The runtime has read the file once the container runs; it goes when the process ends.
      void proc.exited.finally(() => rm(envDir, { recursive: true, force: true }).catch(() => undefined));
      const out = socket === undefined ? proc : socket.attach(proc);
      names.set(out, { runtime: rt, name });
      return out;
    },
    async kill(proc, options): Promise<SandboxExit> {
      if (!isHostProcess(proc)) throw new InputError('SVC_ERR_SANDBOX_FOREIGN_PROCESS', 'this process was not started by the container sandbox');
      const entry = names.get(proc);
      if (entry !== undefined) {
        // The runtime stops the container (SIGTERM, SIGKILL after the grace); the client then exits.
        await execa(entry.runtime.path, ['stop', '-t', String(Math.ceil(options.graceMs / 1000)), entry.name], { reject: false, timeout: options.graceMs + 15_000 });
      }
      return killHostProcess(proc, 2_000);
    },
    async releaseWorkspace(workspace) {
      if (workspace.tmpDir !== undefined) await rm(workspace.tmpDir, { recursive: true, force: true });
    },
  };
}

/**
 * The job's variables for the container, by name and value: an env file (0600, in a private
 * directory outside the container's mounts) so values stay off the runtime's command line, which
 * every local user can read in `ps`. The env-file format is one `NAME=value` line, so a value
 * with a line break goes as `--env=NAME=value` instead.
 */
async function writeEnvFile(root: string, env: Readonly<Record<string, string>>): Promise<{ dir: string; flags: string[] }> {
  const dir = await mkdtemp(join(root, 'svc-job-env-'));
  const lines: string[] = [];
  const flags: string[] = [];
  for (const [k, v] of Object.entries(env)) {
    if (/[\r\n]/.test(v)) flags.push(`--env=${k}=${v}`);
    else lines.push(`${k}=${v}\n`);
  }
  const file = join(dir, 'env');
  await writeFile(file, lines.join(''), { mode: 0o600 });
  return { dir, flags: ['--env-file', file, ...flags] };
}

export const containerSandbox = definePlugin({
  id: 'container',
  kind: 'sandbox',
  version: '0.9.0',
  kernelRange: '^0.9.0',
  description: 'Step runner inside the job container image (podman, or docker with a reachable engine)',
  configSchema: ContainerSandboxConfig,
  create: ({ config }) => createContainerSandbox(config),
});

export default containerSandbox;
