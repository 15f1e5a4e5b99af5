// How `svc dev` talks to the terminal. Three shapes of one event stream:
// - `--json`: every event as one JSON object per line on stdout (progress included);
// - a TTY: progress as a spinner line on stderr that becomes `✓ <what> (1.2s)`, data on stdout;
// - not a TTY (pipes, CI, tests): data lines on stdout only; progress stays quiet.
import { messageOf, isSvcError } from '../../core/errors.ts';
import { formatDuration } from '../../core/durations.ts';

export type DevEvent =
  | { event: 'progress'; phase: string; status: 'done' | 'failed'; ms: number; message: string }
  | { event: 'note'; message: string }
  | {
      event: 'ready';
      repo: string;
      dataDir: string;
      relayUrl: string;
      orchestratorUrl: string;
      issuer: string;
      webhookUrl: string;
      remote: { name: string; url: string };
      agentId: string;
      labels: string[];
      recentRuns: Array<{ runId: string; workflow: string; status: string; sha: string; createdAt: string }>;
      logFile: string;
      /** Shell exports that point `svc runs show/logs` at this relay. */
      cliEnvFile: string;
    }
  | { event: 'push'; ref: string; sha: string; ok: boolean; output: string }
  | { event: 'run'; runId: string; workflow: string; status: string; reason: string | null; sha: string; ref: string | null }
  | { event: 'job'; runId: string; jobId: string; job: string; kind: string; status: string; reason: string | null }
  | { event: 'log'; runId: string; jobId: string; job: string; step: string; stream: string; text: string; at: string }
  | { event: 'stopping'; signal: string }
  | { event: 'stopped' }
  | { event: 'error'; code: string; message: string };

export interface Reporter {
  /** A long operation: spinner on a TTY, one `progress` event in JSON, quiet otherwise. */
  task<T>(phase: string, message: string, fn: () => Promise<T>): Promise<T>;
  emit(event: DevEvent): void;
  close(): void;
}

export interface ReporterOptions {
  json: boolean;
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  /** Colour and spinner; defaults to stderr being a TTY. */
  tty?: boolean;
  /** The clock a task's time is read from (ms); `Date.now` unless a test injects one. */
  now?: () => number;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const TERMINAL_OK = new Set(['completed']);
const TERMINAL_BAD = new Set(['failed', 'cancelled']);

const shortSha = (sha: string) => sha.slice(0, 8);
const seconds = (ms: number) => formatDuration(ms);

export function createReporter(options: ReporterOptions): Reporter {
  const { stdout, stderr, json } = options;
  const now = options.now ?? Date.now;
  const tty = !json && (options.tty ?? stderr.isTTY === true);
  // Colour only where it lands on a terminal: progress on stderr, data on stdout.
  const colourOut = !json && (options.tty ?? stdout.isTTY === true);
  const paintErr = (code: string, text: string) => (tty ? `\x1b[${code}m${text}\x1b[0m` : text);
  const paint = (code: string, text: string) => (colourOut ? `\x1b[${code}m${text}\x1b[0m` : text);
  let spinner: { text: string; frame: number; timer: NodeJS.Timeout } | undefined;

  const clearSpinner = () => {
    if (spinner !== undefined) stderr.write('\r\x1b[2K');
  };
  const drawSpinner = () => {
    if (spinner !== undefined) stderr.write(`\r\x1b[2K${paintErr('36', FRAMES[spinner.frame % FRAMES.length]!)} ${spinner.text}`);
  };
  const out = (line: string) => {
    clearSpinner();
    stdout.write(`${line}\n`);
    drawSpinner();
  };

  const human = (e: DevEvent): void => {
    switch (e.event) {
      case 'progress':
        if (e.status === 'failed') out(paint('31', `✗ ${e.message}`));
        break;
      case 'note':
        out(e.message);
        break;
      case 'ready': {
        const lines = [
          '',
          paint('1', `svc dev is running for ${e.repo}`),
          `  relay          ${e.relayUrl}   (webhook URL ${e.webhookUrl})`,
          `  orchestrator   ${e.orchestratorUrl}   (OIDC issuer ${e.issuer})`,
          `  agent          ${e.agentId}   labels: ${e.labels.join(', ')}`,
          `  git remote     ${e.remote.name} → ${e.remote.url}`,
          `  data           ${e.dataDir}   (log: ${e.logFile})`,
        ];
        if (e.recentRuns.length > 0) {
          lines.push('', `earlier runs (${e.recentRuns.length} most recent):`);
          for (const r of e.recentRuns) lines.push(`  run ${r.runId} ${r.workflow}: ${r.status} (${shortSha(r.sha)}, ${r.createdAt})`);
        }
        lines.push(
          '',
          'next:',
          `  git push ${e.remote.name} HEAD           run the workflows that match the push (from ${e.repo})`,
          '  svc preview push            see which workflows a push would run, without running them',
          `  . ${e.cliEnvFile}; svc runs logs <run id>    a run's logs through the relay, as from a real Platform`,
          '  Ctrl-C                      stop everything; `svc dev` again resumes with the same data',
          '',
        );
        out(lines.join('\n'));
        break;
      }
      case 'push':
        out(e.ok ? `pushed ${e.ref} (${shortSha(e.sha)}) to the svc remote` : paint('31', `push of ${e.ref} failed: ${e.output.split('\n').slice(-3).join(' ')}`));
        break;
      case 'run': {
        const colour = TERMINAL_OK.has(e.status) ? '32' : TERMINAL_BAD.has(e.status) ? '31' : '33';
        out(`${paint('1', `run ${e.runId} ${e.workflow}`)}: ${paint(colour, e.status)}${e.reason ? ` (${e.reason})` : ''}`);
        break;
      }
      case 'job': {
        const colour = TERMINAL_OK.has(e.status) ? '32' : TERMINAL_BAD.has(e.status) ? '31' : '33';
        out(`  job ${e.job}: ${paint(colour, e.status)}${e.reason && e.status !== 'completed' ? ` (${e.reason})` : ''}`);
        break;
      }
      case 'log':
        out(`  ${paint('2', `${e.job} › ${e.step} |`)} ${e.stream === 'stderr' ? paint('31', e.text) : e.text}`);
        break;
      case 'stopping':
        out(`\nstopping (${e.signal}): agent, orchestrator, relay, database…`);
        break;
      case 'stopped':
        out('svc dev stopped');
        break;
      case 'error':
        clearSpinner();
        stderr.write(`${e.code}: ${e.message}\n`);
        drawSpinner();
        break;
    }
  };

  const emit = (event: DevEvent) => {
    if (json) {
      stdout.write(`${JSON.stringify(event)}\n`);
      // Errors also go to stderr as one actionable line, whatever the output format.
      if (event.event === 'error') stderr.write(`${event.code}: ${event.message}\n`);
    } else human(event);
  };

  return {
    emit,
    async task(phase, message, fn) {
      const started = now();
      if (tty && spinner === undefined) {
        spinner = { text: `${message}…`, frame: 0, timer: setInterval(() => { spinner!.frame += 1; drawSpinner(); }, 80) };
        spinner.timer.unref();
        drawSpinner();
      }
      const finish = () => {
        if (spinner !== undefined) {
          clearInterval(spinner.timer);
          clearSpinner();
          spinner = undefined;
        }
      };
      try {
        const value = await fn();
        finish();
        const ms = now() - started;
        if (json) emit({ event: 'progress', phase, status: 'done', ms, message });
        else if (tty) stderr.write(`${paintErr('32', '✓')} ${message} ${paintErr('2', `(${seconds(ms)})`)}\n`);
        return value;
      } catch (error) {
        finish();
        const ms = now() - started;
        const why = isSvcError(error) ? `${error.code}: ${messageOf(error)}` : messageOf(error);
        if (json) emit({ event: 'progress', phase, status: 'failed', ms, message: `${message}: ${why}` });
        else if (tty) stderr.write(`${paintErr('31', '✗')} ${message}\n`);
        throw error;
      }
    },
    close() {
      if (spinner !== undefined) {
        clearInterval(spinner.timer);
        clearSpinner();
        spinner = undefined;
      }
    },
  };
}
