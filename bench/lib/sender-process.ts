// The bench's side of lib/webhook-sender.ts: fork it, hand it one job, wait until it says it is
// warm (the bench reads its "before" figures then), and start the measured phase with `go`.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface WarmSender<T> {
  /** Starts the measured phase; resolves with the sender's answer (rejects if it exits first). */
  go(): Promise<T>;
}

/** Forks the sender (added to `children`, which the bench stops at exit) and waits for its warm-up. */
export async function warmSender<T>(job: Record<string, unknown>, children: ChildProcess[]): Promise<WarmSender<T>> {
  const sender = fork(fileURLToPath(new URL('./webhook-sender.ts', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(sender);
  const exited = new Promise<never>((_resolve, reject) => sender.once('exit', (code) => reject(new Error(`the webhook sender exited ${code} before it answered`))));
  exited.catch(() => undefined);
  const warm = new Promise<void>((resolve) => sender.once('message', () => resolve()));
  sender.send(job);
  await Promise.race([warm, exited]);
  return {
    go() {
      const answered = new Promise<T>((resolve) => sender.once('message', (answer: T) => resolve(answer)));
      sender.send({ go: true });
      return Promise.race([answered, exited]);
    },
  };
}
