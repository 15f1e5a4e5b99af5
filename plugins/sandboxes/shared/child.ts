// The one way every sandbox starts a host process: execa with an argument array (no shell), a
// complete environment (nothing inherited), its own process group so a kill reaches every
// descendant, and optionally a JSON IPC channel for the step runner protocol.
import type { ChildProcess } from 'node:child_process';
import { execa, type ResultPromise } from 'execa';
import type { SandboxExit, SandboxProcess } from '../../../kernel/host/extension-points/sandbox.ts';

export interface HostSpawn {
  argv: readonly string[];
  env: Readonly<Record<string, string>>;
  cwd: string;
  ipc?: boolean;
}

export interface HostProcess extends SandboxProcess {
  /** SIGTERM (or `signal`) to the whole process group. */
  signal(signal: NodeJS.Signals): boolean;
}

export function spawnHostProcess(request: HostSpawn): HostProcess {
  const [file, ...args] = request.argv;
  if (file === undefined || file === '') throw new Error('argv[0] (the program) is required');
  const child = execa(file, args, {
    cwd: request.cwd,
    env: { ...request.env },
    extendEnv: false,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    buffer: false,
    reject: false,
    killDescendants: true,
    // The agent ends sandboxes itself; execa's exit cleanup would also do it on agent exit.
    cleanup: true,
    ...(request.ipc ? { ipc: true, serialization: 'json' as const } : {}),
  }) as unknown as ResultPromise & Pick<ChildProcess, 'send' | 'connected' | 'on'>;
  const exited: Promise<SandboxExit> = child.then(
    (result) => ({ code: result.exitCode ?? null, signal: result.signal ?? null }),
    (error: { exitCode?: number; signal?: string }) => ({ code: error.exitCode ?? null, signal: error.signal ?? null }),
  );
  const out: HostProcess = {
    pid: child.pid,
    stdout: child.stdout!,
    stderr: child.stderr!,
    stdin: null,
    exited,
    signal: (signal) => child.kill(signal),
  };
  if (request.ipc) {
    out.send = (message: unknown) => {
      if (child.connected) child.send(message as Parameters<ChildProcess['send']>[0]);
    };
    out.onMessage = (listener) => {
      child.on('message', listener);
    };
  }
  return out;
}

/** SIGTERM the group, SIGKILL after `graceMs`; resolves with the exit. */
export async function killHostProcess(proc: HostProcess, graceMs: number): Promise<SandboxExit> {
  let settled = false;
  void proc.exited.then(() => {
    settled = true;
  });
  if (graceMs <= 0) {
    proc.signal('SIGKILL');
    return proc.exited;
  }
  proc.signal('SIGTERM');
  const timer = setTimeout(() => {
    if (!settled) proc.signal('SIGKILL');
  }, graceMs);
  try {
    return await proc.exited;
  } finally {
    clearTimeout(timer);
  }
}

export function isHostProcess(value: SandboxProcess): value is HostProcess {
  return typeof (value as Partial<HostProcess>).signal === 'function';
}
