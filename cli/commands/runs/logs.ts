// `svc runs logs <run_id> [--follow] [--json]`: every log line of a run through the Platform
// (already masked by the agent; nothing is unmasked here). Text: lines grouped by job under
// `== <job> ==`, setup output under a `(setup)` heading and step output under `-- <step> --`.
// JSON: `{ runId, status, logs }` where `logs` maps `setup:<job>` (setup lines), `<job>:<step>`
// (step lines) and `<job>` (lines outside any step) to arrays of `{ at, stream, text }`, keys in
// the order lines first appeared. `--follow` polls every second with the cursor until the run
// has ended and every line is read.
import { Args, Flags } from '@oclif/core';
import type { RunLogLine, RunLogsPage } from '../../../schemas/wire/relay.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { UnavailableError, isSvcError } from '../../../core/errors.ts';

export const SETUP_STEP = '(setup)';
export const FOLLOW_INTERVAL_MS = 1_000;
/** Consecutive unavailable answers tolerated while following (an orchestrator restarting). */
const FOLLOW_RETRIES = 5;
/** Pages read in one go without --follow (each page is up to 1 MiB). */
const MAX_PAGES = 100_000;

export interface LogEntry {
  at: string;
  stream: string;
  text: string;
}

export interface LogsOutput {
  runId: string;
  status: string;
  logs: Record<string, LogEntry[]>;
}

/** The JSON key of a line: `setup:<job>`, `<job>:<step>`, or `<job>` outside any step. */
export function logKey(line: Pick<RunLogLine, 'job' | 'step'>): string {
  if (line.step === SETUP_STEP) return `setup:${line.job}`;
  return line.step === '' ? line.job : `${line.job}:${line.step}`;
}

/** Prints lines as text, with a heading whenever the job or step changes. */
export class TextPrinter {
  #job: string | undefined;
  #step: string | undefined;
  readonly #write: (line: string) => void;

  constructor(write: (line: string) => void) {
    this.#write = write;
  }

  print(lines: readonly RunLogLine[]): void {
    for (const line of lines) {
      if (line.jobId !== this.#job) {
        this.#write(`== ${line.job} ==`);
        this.#job = line.jobId;
        this.#step = undefined;
      }
      if (line.step !== this.#step) {
        if (line.step === SETUP_STEP) this.#write(SETUP_STEP);
        else if (line.step !== '') this.#write(`-- ${line.step} --`);
        this.#step = line.step;
      }
      // One stored line may hold several text lines; print them as they are.
      this.#write(line.text.replace(/\n$/, ''));
    }
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export default class RunsLogs extends SvcCommand {
  static override description = 'Print the log lines of a run through the Platform; --follow until the run ends';
  static override examples = ['<%= config.bin %> runs logs 0b7c5b0e-…', '<%= config.bin %> runs logs 0b7c5b0e-… --follow', '<%= config.bin %> runs logs 0b7c5b0e-… --json'];
  static override args = { run_id: Args.string({ required: true, description: 'run id' }) };
  static override flags = { follow: Flags.boolean({ char: 'f', description: 'keep polling (every second) until the run has ended', default: false }) };

  async run(): Promise<LogsOutput> {
    const { args, flags } = await this.parse(RunsLogs);
    const { PlatformClient, checkRunIdArg } = await import('../../platform-client.ts');
    const runId = checkRunIdArg(args.run_id);
    const client = await PlatformClient.fromConfig();
    const json = this.jsonEnabled();
    const printer = new TextPrinter((line) => this.log(line));
    const logs: Record<string, LogEntry[]> = {};
    let cursor: string | undefined;
    let page: RunLogsPage | undefined;
    let failures = 0;
    for (let pages = 0; ; ) {
      try {
        page = await client.runLogs(runId, cursor);
        failures = 0;
      } catch (error) {
        // While following, an orchestrator restart is waited out a few times; a first read is not.
        if (!flags.follow || page === undefined || !(isSvcError(error) && error.kind === 'unavailable') || ++failures > FOLLOW_RETRIES) throw error;
        await sleep(FOLLOW_INTERVAL_MS);
        continue;
      }
      cursor = page.cursor;
      if (json) for (const line of page.lines) (logs[logKey(line)] ??= []).push({ at: line.at, stream: line.stream, text: line.text });
      else printer.print(page.lines);
      if (page.more) {
        if (++pages > MAX_PAGES) throw new UnavailableError('SVC_ERR_CLI_LOGS_TOO_MANY_PAGES', `more than ${MAX_PAGES} log pages; stopped`);
        continue;
      }
      if (!flags.follow || page.terminal) break;
      await sleep(FOLLOW_INTERVAL_MS);
    }
    return { runId, status: page.status, logs };
  }
}
