// Why `svc dev` runs its stack in a child process of its own process group: Ctrl-C in a terminal
// sends SIGINT to every process of the foreground group, which would include the embedded
// PostgreSQL server and the agent's step runners. PostgreSQL would then shut down at once while
// the orchestrator and the agent are still writing their last records, and running steps would
// die instead of being cancelled. The parent only forwards the first signal as one SIGINT to the
// child, which stops its parts in order (agent → orchestrator → relay → database); output is
// inherited, so the child sees the terminal as the parent does. The child stops by itself when
// the parent disappears (its IPC channel closes).
import { spawn } from 'node:child_process';

/** Set in the child's environment (not an `SVC_` name: those are configuration). */
export const SUPERVISED_ENV = 'SVCDEV_SUPERVISED';

export function isSupervisedChild(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[SUPERVISED_ENV] === '1' && typeof process.send === 'function';
}

/** Resolves when the supervising parent is gone (the child's stop signal). */
export function parentGone(): Promise<void> {
  // The channel must not keep the child alive once its stack has stopped.
  process.channel?.unref();
  return new Promise((resolve) => process.once('disconnect', () => resolve()));
}

/** Runs this same command line in a child in its own process group; resolves with its exit code. */
export async function superviseDev(): Promise<number> {
  const script = process.argv[1];
  if (script === undefined) throw new Error('cannot find the svc entry script to supervise');
  const child = spawn(process.execPath, [...process.execArgv, script, ...process.argv.slice(2)], {
    detached: true,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [SUPERVISED_ENV]: '1' },
  });
  let forwarded = 0;
  const forward = (signal: NodeJS.Signals) => {
    forwarded += 1;
    // The first signal asks for the ordered stop; a second one is passed on as it is ("now").
    if (child.exitCode === null && child.signalCode === null) child.kill(forwarded === 1 ? 'SIGINT' : signal);
  };
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  try {
    return await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => resolve(code ?? 1));
    });
  } finally {
    process.off('SIGINT', forward);
    process.off('SIGTERM', forward);
  }
}
