// Test results, runner side (docs/test-results.md). Before a step: a fresh file named by
// SVC_TEST_RESULTS, where any command of the step may append result file paths (one a line), and
// an empty list for ctx.tests.report. After it: the job's and the step's `testResults` globs and
// the reported paths go to the agent (`tests.collect`), which reads and parses the files in its
// own process, so a hostile or huge file can never take the step's process down with it.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { messageOf } from '../../core/errors.ts';
import type { Job } from '../../sdk/job.ts';
import { ShellCommandError } from '../../sdk/shell.ts';
import type { Step } from '../../sdk/step.ts';
import type { RunnerChannel } from './ipc.ts';
import type { LogSink } from './log-capture.ts';
import { runnerScratch } from './temp-paths.ts';

export const TEST_RESULTS_ENV = 'SVC_TEST_RESULTS';
const MAX_REPORTED = 1000;
const MAX_LIST_BYTES = 1024 * 1024;

/** The per-step state: the SVC_TEST_RESULTS file and what ctx.tests.report added. */
export interface StepTestReports {
  file: string;
  paths: string[];
}

export interface CollectedTests {
  total: number;
  failed: number;
  quarantinedFailed: number;
  waived: boolean;
  /** The line the step's record carries when its failure is waived. */
  note: string;
}

function patternsOf(value: string | readonly string[] | undefined): string[] {
  return value === undefined ? [] : typeof value === 'string' ? [value] : [...value];
}

let counter = 0;

/** Before a step body: a new list file, exported to the step's commands. */
export async function beginStepReports(env: Record<string, string | undefined>): Promise<StepTestReports> {
  const file = join(runnerScratch, `svc-test-results-${process.pid}-${++counter}.txt`);
  await writeFile(file, '', { mode: 0o600 });
  env[TEST_RESULTS_ENV] = file;
  return { file, paths: [] };
}

async function listedPaths(reports: StepTestReports): Promise<string[]> {
  const text = await readFile(reports.file, 'utf8').catch(() => '');
  await rm(reports.file, { force: true });
  return text
    .slice(0, MAX_LIST_BYTES)
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

type StepOutcome = { kind: 'ok' | 'error' | 'timeout' | 'aborted'; error?: unknown };

/** True when the step failed because a command exited non-zero, and for no other reason. */
export function isExitFailure(outcome: StepOutcome): boolean {
  if (outcome.kind !== 'error' || !(outcome.error instanceof ShellCommandError)) return false;
  const code = outcome.error.exitCode;
  return typeof code === 'number' && code !== 0;
}

/** The largest exit code the wire carries (schemas/wire/runner.ts CommandExitCode). */
const MAX_REPORTED_EXIT = 2_147_483_647;

/**
 * The exit code of the command that failed the step, when `isExitFailure` holds (a `ctx.$`
 * ShellCommandError with a non-zero code: not a timeout, cancel, signal or thrown error), else
 * undefined. A job retry policy's `exitCodes` is decided on it (docs/run-states.md "Retries").
 */
export function commandExitCode(outcome: StepOutcome): number | undefined {
  if (!isExitFailure(outcome)) return undefined;
  const code = (outcome.error as ShellCommandError).exitCode!;
  return Number.isSafeInteger(code) && code >= 1 && code <= MAX_REPORTED_EXIT ? code : undefined;
}

/**
 * After a step that ran (not skipped, not cancelled): hands its result files to the agent. Returns
 * undefined when the step declared and reported none. A failure to collect is logged on the step
 * and never changes its status (the results are then simply missing, with the reason).
 */
export async function collectStepTests(
  io: { channel: RunnerChannel; sink: LogSink; env: Record<string, string | undefined> },
  job: Job,
  step: Step,
  index: number,
  reports: StepTestReports,
  outcome: StepOutcome,
): Promise<CollectedTests | undefined> {
  delete io.env[TEST_RESULTS_ENV];
  const patterns = [...patternsOf(job.options.testResults), ...patternsOf(step.options.testResults)];
  const paths = [...new Set([...reports.paths, ...(await listedPaths(reports))])];
  if (patterns.length === 0 && paths.length === 0) return undefined;
  if (paths.length > MAX_REPORTED) {
    io.sink.line(step.name, 'system', `test results: ${paths.length} files reported; reading the first ${MAX_REPORTED}`);
    paths.length = MAX_REPORTED;
  }
  const exitFailure = isExitFailure(outcome);
  try {
    const result = await io.channel.request('tests.collect', { index, name: step.name, patterns, paths, exitFailure }, `step ${step.name} test results`);
    for (const problem of result.problems) io.sink.line(step.name, 'system', `test results: ${problem}`);
    const summary = `test results: ${result.total} tests from ${result.files} file${result.files === 1 ? '' : 's'}, ${result.failed} failed${result.quarantinedFailed > 0 ? ` (${result.quarantinedFailed} quarantined)` : ''}`;
    io.sink.line(step.name, 'system', summary);
    const note = `failed only in quarantined tests: ${result.quarantinedFailed} failing test${result.quarantinedFailed === 1 ? ' is' : 's are'} quarantined; the failure does not fail the job`;
    if (result.waived) io.sink.line(step.name, 'system', note);
    io.sink.flush(step.name);
    return { total: result.total, failed: result.failed, quarantinedFailed: result.quarantinedFailed, waived: result.waived && exitFailure, note };
  } catch (error) {
    io.sink.line(step.name, 'system', `test results were not recorded: ${messageOf(error)}`);
    io.sink.flush(step.name);
    return undefined;
  }
}

/** A step that was skipped or cancelled: its list file goes, nothing is read. */
export async function discardStepReports(env: Record<string, string | undefined>, reports: StepTestReports): Promise<void> {
  delete env[TEST_RESULTS_ENV];
  await rm(reports.file, { force: true });
}
