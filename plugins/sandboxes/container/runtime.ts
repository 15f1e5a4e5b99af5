// Which container CLI this host can use, and the run flags each needs. podman is preferred: it
// runs without a daemon and can hand the step runner's IPC descriptor into the container
// (`--preserve-fds`); docker cannot, so its runner connects to a unix socket (socket-ipc.ts).
// docker counts only when its engine answers (a docker client without a daemon is common and useless).
import { execa } from 'execa';
import { findExecutable } from '../shared/which.ts';

export type RuntimeKind = 'podman' | 'docker';

export interface DetectedRuntime {
  kind: RuntimeKind;
  path: string;
}

async function works(path: string, args: string[]): Promise<boolean> {
  const result = await execa(path, args, { reject: false, timeout: 10_000, stdin: 'ignore' });
  return result.exitCode === 0;
}

export async function detectRuntime(preference: 'auto' | RuntimeKind): Promise<DetectedRuntime | { missing: string; message: string }> {
  const tried: string[] = [];
  for (const kind of preference === 'auto' ? (['podman', 'docker'] as const) : [preference]) {
    const path = await findExecutable(kind);
    if (path === null) {
      tried.push(`${kind} is not installed`);
      continue;
    }
    const probe = kind === 'podman' ? ['version', '--format', '{{.Client.Version}}'] : ['version', '--format', '{{.Server.Version}}'];
    if (await works(path, probe)) return { kind, path };
    tried.push(kind === 'docker' ? 'docker is installed but its engine is not reachable' : 'podman is installed but does not run');
  }
  const missing = preference === 'auto' ? 'podman' : preference;
  return { missing, message: `no container runtime: ${tried.join('; ')}` };
}

/** Flags every `podman run` needs on these hosts (toolchain.md: runc and explicit ulimits). */
export const PODMAN_RUN_FLAGS: readonly string[] = ['--runtime', 'runc', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'];

/**
 * Flags every `docker run` gets. `--init`: a small init is PID 1, so `docker stop`'s SIGTERM reaches
 * the runner and orphaned step processes are reaped. nofile as on podman, so jobs see the same
 * limit on either runtime; nproc is left to the daemon: without user-namespace remapping it would
 * count every process the agent's user runs on the host, not the job's.
 */
export const DOCKER_RUN_FLAGS: readonly string[] = ['--init', '--ulimit', 'nofile=1024:1024'];

/**
 * docker runs containers as the image's user (root) unless told: run as the agent's uid:gid so the
 * files a job writes in the bind-mounted workspace stay the agent's to clean up, and the runner
 * may connect to the agent's 0600 IPC socket. (rootless podman maps container root to the agent's user.)
 */
export function dockerUserFlags(): string[] {
  const uid = process.getuid?.();
  const gid = process.getgid?.();
  return uid === undefined || gid === undefined ? [] : ['--user', `${uid}:${gid}`];
}

/** Directories a runtime's network helpers are found in (netavark runs iptables/nft from them). */
const SBIN_DIRS = ['/usr/local/sbin', '/usr/sbin', '/sbin'];

/**
 * The environment of the runtime process itself: the agent's own, since podman and its helpers
 * (netavark, conmon, a pull through the operator's proxy) need the agent's PATH, HOME,
 * XDG_RUNTIME_DIR and proxy settings, not the job's. The agent's own settings (`SVC_*`: its token,
 * its orchestrator) are left out, and the sbin directories are appended to PATH when missing (an
 * unprivileged login shell's PATH lacks them). Nothing here reaches the container: the job's
 * variables go in by name and value (an env file), never by copying the runtime's.
 */
export function runtimeEnv(agentEnv: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(agentEnv)) if (v !== undefined && !k.startsWith('SVC_')) env[k] = v;
  const path = (env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin').split(':').filter(Boolean);
  env['PATH'] = [...path, ...SBIN_DIRS.filter((d) => !path.includes(d))].join(':');
  return env;
}
