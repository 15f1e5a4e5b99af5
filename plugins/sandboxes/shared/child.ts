// The one way every sandbox starts a host process: an argument array (no shell), a complete
// environment (nothing inherited), its own process group so a kill reaches every descendant,
// and optionally a JSON IPC channel for the step runner protocol. node:child_process directly:
// execa 10 hides the ChildProcess `send`/`message` pair the runner protocol is built on.
import { spawn, type ChildProcess } from 'node:child_process';
import type { SandboxExit, SandboxProcess } from '../../../core/extension-points/sandbox.ts';

export interface HostSpawn {
  argv: readonly string[];
  env: Readonly<Record<string, string>>;
  cwd: string;
  ipc?: boolean;
}

export interface HostProcess extends SandboxProcess {
  /** Signal the whole process group (falls back to the direct child). */
  signal(signal: NodeJS.Signals): boolean;
}

// Process groups still running: killed if the agent itself exits, so no job outlives it.
const liveGroups = new Set<number>();
let exitHook = false;
function trackGroup(pid: number): void {
  liveGroups.add(pid);
  if (!exitHook) {
    exitHook = true;
    process.on('exit', () => {
      for (const group of liveGroups) {
        try {
          process.kill(-group, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    });
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): boolean {
  if (child.pid === undefined) return false;
  try {
    return process.kill(-child.pid, signal);
  } catch {
    try {
      return child.kill(signal);
    } catch {
      return false;
    }
  }
}

export function spawnHostProcess(request: HostSpawn): HostProcess {
  const [file, ...args] = request.argv;
  if (file === undefined || file === '') throw new Error('argv[0] (the program) is required');
  const child = spawn(file, args, {
    cwd: request.cwd,
    env: { ...request.env },
    detached: true,
    stdio: request.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
    serialization: 'json',
    windowsHide: true,
  });
  if (child.pid !== undefined) trackGroup(child.pid);
  const exited = new Promise<SandboxExit>((resolve) => {
    let done = false;
    const finish = (exit: SandboxExit) => {
      if (done) return;
      done = true;
      if (child.pid !== undefined) {
        // Stragglers that kept running after the leader exited go with it.
        signalGroup(child, 'SIGKILL');
        liveGroups.delete(child.pid);
      }
      resolve(exit);
    };
    child.once('error', () => finish({ code: null, signal: null }));
    child.once('exit', (code, signal) => {
      // Give the pipes a moment to drain, but never wait on a descendant holding them open.
      const timer = setTimeout(() => finish({ code, signal }), 2_000);
      child.once('close', () => {
        clearTimeout(timer);
        finish({ code, signal });
      });
    });
  });
  const out: HostProcess = {
    pid: child.pid,
    stdout: child.stdout!,
    stderr: child.stderr!,
    stdin: null,
    exited,
    signal: (signal) => signalGroup(child, signal),
  };
  if (request.ipc) {
    out.send = (message: unknown) => {
      if (child.connected) child.send(message as Parameters<ChildProcess['send']>[0], (error) => void error);
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
