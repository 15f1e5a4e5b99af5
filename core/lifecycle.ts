// How every server program lives and dies (interfaces.md): one `ready` line with its address,
// a one-line reason and a non-zero exit on a fatal start error, a clean stop on SIGTERM/SIGINT.
import { isSvcError, messageOf } from './errors.ts';

/** The part of a server's (pino) logger the stop is logged through. */
export interface StopLog {
  info(fields: Record<string, unknown>, message: string): void;
}

export interface RunningServer {
  /** Address printed on the ready line. */
  url: string;
  /** Finish or hand back in-flight work, close sockets. */
  stop(): Promise<void>;
  /**
   * The server's own JSON logger: the stop is logged through it (`stopping` with the signal,
   * then `stopped` with how long it took), so a supervisor's log shows why and when the process
   * ended.
   */
  logger?: StopLog;
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
  const signal = await stopRequested;
  const began = Date.now();
  server.logger?.info({ signal }, 'stopping');
  try {
    await server.stop();
    server.logger?.info({ signal, ms: Date.now() - began }, 'stopped');
    return 0;
  } catch (error) {
    stderr.write(`${name}: stop failed: ${oneLineError(error)}\n`);
    return 1;
  }
}

/** How long a server's process may stay up after its stop returned before it is ended. */
export const EXIT_AFTER_STOP_MS = 10_000;

/**
 * A stopped server's process ends once nothing is left open. Should something be left (a timer
 * re-armed after its pool closed, a socket), the process would stay up for ever, holding its
 * port and its supervisor's stop: after `graceMs` it exits with `code` anyway, naming what was
 * still open so the leak can be found. The timer itself does not keep the process up.
 */
export function exitAfterStop(name: string, code: number, graceMs = EXIT_AFTER_STOP_MS, stderr: NodeJS.WritableStream = process.stderr): void {
  setTimeout(() => {
    const open = process.getActiveResourcesInfo().filter((kind) => kind !== 'TTYWrap');
    stderr.write(`${name}: still running ${graceMs / 1000} s after a finished stop (open: ${open.join(', ') || 'nothing'}); exiting\n`);
    process.exit(code);
  }, graceMs).unref();
}
