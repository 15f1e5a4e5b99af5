// How every server program lives and dies (interfaces.md): one `ready` line with its address,
// a one-line reason and a non-zero exit on a fatal start error, a clean stop on SIGTERM/SIGINT.
import { isSvcError, messageOf } from './errors.ts';

export interface RunningServer {
  /** Address printed on the ready line. */
  url: string;
  /** Finish or hand back in-flight work, close sockets. */
  stop(): Promise<void>;
}

export interface ProgramIo {
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  /** Test hook: resolves when the program should stop, instead of a signal. */
  stopSignal?: Promise<unknown>;
}

export function oneLineError(error: unknown): string {
  const text = messageOf(error).replace(/\s*\n\s*/g, ' ').trim();
  return isSvcError(error) ? `${error.code}: ${text}` : text;
}

export async function runServerProgram(name: string, start: () => Promise<RunningServer>, io: ProgramIo = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  let server: RunningServer;
  try {
    server = await start();
  } catch (error) {
    stderr.write(`${name}: ${oneLineError(error)}\n`);
    return 1;
  }
  stdout.write(`${name} ready ${server.url}\n`);

  const stopRequested = new Promise<string>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      // A second signal while stopping means "now".
      process.once(signal, () => {
        stderr.write(`${name}: second ${signal}, exiting without a clean stop\n`);
        process.exit(1);
      });
      resolve(signal);
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
    io.stopSignal?.then(() => resolve('stop'));
  });
  await stopRequested;
  try {
    await server.stop();
    return 0;
  } catch (error) {
    stderr.write(`${name}: stop failed: ${oneLineError(error)}\n`);
    return 1;
  }
}
