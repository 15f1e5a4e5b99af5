// The real StepContext: what createTestStepContext gives a unit test, backed by the job's
// state and the agent. One context per activity (step, hook, rule, outputs function) so that
// its shell, log lines and AbortSignal belong to that activity; the environment, outputs and
// temp directory are the job's and shared.
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { InputError, NotFoundError } from '../../core/errors.ts';
import type {
  AttestProvenanceOptions,
  InputValue,
  MatrixCombination,
  RuleContext,
  SdkEvent,
  StepContext,
  StepLogger,
} from '../../sdk/context.ts';
import type { EnvEffect, RunnerStart } from '../../schemas/wire/runner.ts';
import type { Activity } from './activity.ts';
import { RunnerErrorCode } from './errors.ts';
import type { RunnerChannel } from './ipc.ts';
import type { LogSink } from './log-capture.ts';
import { createRunnerShell } from './shell.ts';
import type { StepTestReports } from './test-results.ts';
import { JOB_TEMP_PREFIX, runnerScratch, tempDirName, tempFileName } from './temp-paths.ts';

/** The job state contexts read and write. */
export interface JobRuntime {
  readonly start: RunnerStart;
  readonly channel: RunnerChannel;
  readonly sink: LogSink;
  /** Live job environment (start.env, then setEnv/addPath). */
  readonly env: Record<string, string | undefined>;
  /** Outputs of steps that completed, by step name. */
  readonly stepOutputs: Map<string, Readonly<Record<string, unknown>>>;
  /** Why a step has no outputs (skipped, failed, not run yet), for outputsOf's message. */
  readonly noOutputsReason: Map<string, string>;
  /** setEnv/addPath calls not yet in a step checkpoint (a resumed job replays them). */
  readonly effects: EnvEffect[];
  tempRoot: string | undefined;
  tempCount: number;
  /** The running step body's result-file reports (ctx.tests.report); undefined between steps. */
  testReports?: StepTestReports | undefined;
}

/** Runtime extras on every real context (not in the SDK's StepContext type yet). */
export interface RunnerContextExtras {
  /** Aborted when the step or hook is cancelled or times out. */
  readonly signal: AbortSignal;
}

const EVENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function jsonCopy(what: string, payload: unknown): unknown {
  if (payload === undefined) return undefined;
  try {
    return JSON.parse(JSON.stringify(payload)) as unknown;
  } catch (error) {
    throw new InputError('SVC_ERR_STEP_EMIT_PAYLOAD', `${what}: payload must be JSON-serializable`, { cause: error });
  }
}

function lookupSecret(secrets: Readonly<Record<string, string>>, key: string): string | undefined {
  if (typeof key !== 'string' || key === '') throw new InputError('SVC_ERR_STEP_SECRET_NAME', 'ctx.secrets.get takes a non-empty name');
  if (Object.hasOwn(secrets, key)) return secrets[key];
  if (key.includes(':')) return undefined;
  // Qualified keys (`<context>:<KEY>`) answer an unqualified name when exactly one context has it.
  const holders = Object.keys(secrets).filter((k) => k.endsWith(`:${key}`));
  if (holders.length > 1) {
    throw new InputError(
      'SVC_ERR_STEP_SECRET_AMBIGUOUS',
      `secret ${key} exists in contexts ${holders.map((h) => h.slice(0, -key.length - 1)).sort().join(', ')}: qualify it as <context>:${key}`,
    );
  }
  return holders.length === 1 ? secrets[holders[0]!] : undefined;
}

export function ruleContext(job: JobRuntime, activity: Activity): RuleContext {
  return {
    event: (job.start.event ?? {}) as SdkEvent,
    changedFiles: job.start.changedFiles ?? [],
    env: job.env,
    inputs: (job.start.inputs ?? {}) as Readonly<Record<string, InputValue>>,
    $: createRunnerShell({ cwd: job.start.workspace, env: () => job.env, activity, sink: job.sink }),
  };
}

/**
 * @param secretOutputs where setSecretOutput stores (the running step's); undefined outside a
 *   step body, where setSecretOutput throws.
 */
export function createStepContext(
  job: JobRuntime,
  activity: Activity,
  secretOutputs?: Map<string, string>,
): StepContext<any, MatrixCombination> & RunnerContextExtras {
  const { start, channel, sink } = job;
  const label = activity.label;
  const fields = (f?: Readonly<Record<string, unknown>>) => (f === undefined ? '' : ` ${JSON.stringify(f)}`);
  const log: StepLogger = {
    info: (message, f) => sink.line(label, 'system', `${message}${fields(f)}`),
    warn: (message, f) => sink.line(label, 'system', `warning: ${message}${fields(f)}`),
    error: (message, f) => sink.line(label, 'stderr', `${message}${fields(f)}`),
  };
  const root = async (): Promise<string> => {
    job.tempRoot ??= await mkdtemp(join(runnerScratch, JOB_TEMP_PREFIX));
    return job.tempRoot;
  };
  const secret = (value: string) => {
    if (value.length > 0) channel.send({ type: 'runner.secret', value });
  };

  return {
    ...ruleContext(job, activity),
    signal: activity.signal,
    matrix: (start.matrix ?? {}) as MatrixCombination,
    repoRoot: start.workspace,
    isTestRun: start.isTestRun,
    log,
    setEnv(key: string, value: string) {
      if (typeof key !== 'string' || !ENV_NAME.test(key)) {
        throw new InputError('SVC_ERR_STEP_ENV_NAME', `ctx.setEnv: ${JSON.stringify(key)} is not a valid variable name`);
      }
      if (typeof value !== 'string') throw new InputError('SVC_ERR_STEP_ENV_VALUE', `ctx.setEnv(${key}): value must be a string`);
      job.env[key] = value;
      process.env[key] = value;
      job.effects.push({ setEnv: key, value });
    },
    addPath(dir: string) {
      if (typeof dir !== 'string' || dir === '' || dir.includes(delimiter)) {
        throw new InputError('SVC_ERR_STEP_PATH', `ctx.addPath: ${JSON.stringify(dir)} is not a single directory`);
      }
      job.env['PATH'] = job.env['PATH'] ? `${dir}${delimiter}${job.env['PATH']}` : dir;
      process.env['PATH'] = job.env['PATH'];
      job.effects.push({ addPath: dir });
    },
    outputsOf(stepName: string) {
      const outputs = job.stepOutputs.get(stepName);
      if (outputs === undefined) {
        const why = job.noOutputsReason.get(stepName) ?? 'it is not a step of this job or has not run yet';
        throw new NotFoundError('SVC_ERR_STEP_NO_OUTPUTS', `ctx.outputsOf(${JSON.stringify(stepName)}): no outputs: ${why}`);
      }
      return outputs;
    },
    jobOutputs(jobName: string) {
      return Object.hasOwn(start.needs, jobName) ? start.needs[jobName] : undefined;
    },
    setSecretOutput(key: string, value: string) {
      if (typeof key !== 'string' || key === '' || typeof value !== 'string') {
        throw new InputError('SVC_ERR_STEP_SECRET_OUTPUT', 'ctx.setSecretOutput takes a non-empty key and a string value');
      }
      if (secretOutputs === undefined) throw new InputError(RunnerErrorCode.notInStep, 'ctx.setSecretOutput works only in a step body');
      secret(value);
      secretOutputs.set(key, value);
    },
    secrets: { get: (key: string) => lookupSecret(start.secrets, key) },
    async emit(name: string, payload?: unknown) {
      if (typeof name !== 'string' || !EVENT_NAME.test(name)) {
        throw new InputError('SVC_ERR_STEP_EMIT_NAME', `ctx.emit: ${JSON.stringify(name)} is not a valid event name`);
      }
      const copy = jsonCopy(`ctx.emit(${JSON.stringify(name)})`, payload);
      const result = await channel.request('emit', copy === undefined ? { name } : { name, payload: copy }, 'ctx.emit');
      return result.deliveryId === undefined ? {} : { deliveryId: result.deliveryId };
    },
    async mktemp() {
      const dir = join(await root(), tempDirName(++job.tempCount));
      await mkdir(dir, { mode: 0o700 });
      return dir;
    },
    async mktempFile(options?: { readonly suffix?: string }) {
      const suffix = options?.suffix ?? '';
      if (typeof suffix !== 'string' || /[/\\\0]/.test(suffix)) {
        throw new InputError('SVC_ERR_STEP_TEMP_SUFFIX', 'ctx.mktempFile: suffix cannot contain path separators');
      }
      const file = join(await root(), tempFileName(++job.tempCount, suffix));
      await writeFile(file, '', { flag: 'wx', mode: 0o600 });
      return file;
    },
    cache: {
      async restore(key, options) {
        const args = { key, paths: [...(options?.paths ?? [])], ...(options?.restoreKeys === undefined ? {} : { restoreKeys: [...options.restoreKeys] }) };
        const result = await channel.request('cache.restore', args, 'ctx.cache.restore');
        return result.matchedKey === undefined ? { hit: result.hit } : { hit: result.hit, matchedKey: result.matchedKey };
      },
      async save(key, paths) {
        return channel.request('cache.save', { key, paths: [...(paths ?? [])] }, 'ctx.cache.save');
      },
    },
    artifacts: {
      async upload(name, paths, options) {
        const retention = options?.retentionDays === undefined ? {} : { retentionDays: options.retentionDays };
        return channel.request('artifacts.upload', { name, paths: [...(paths ?? [])], ...retention }, 'ctx.artifacts.upload');
      },
      async download(name, destination, options) {
        const args = { name, ...(destination === undefined ? {} : { destination }), ...(options?.from === undefined ? {} : { from: options.from }) };
        return channel.request('artifacts.download', args, 'ctx.artifacts.download');
      },
    },
    tests: {
      report(path: string) {
        if (typeof path !== 'string' || path.trim() === '' || path.includes('\0')) {
          throw new InputError('SVC_ERR_STEP_TEST_RESULTS_PATH', 'ctx.tests.report takes the path of a JUnit XML or TAP file');
        }
        const reports = job.testReports;
        if (reports === undefined || secretOutputs === undefined) throw new InputError(RunnerErrorCode.notInStep, 'ctx.tests.report works only in a step body');
        if (!reports.paths.includes(path)) reports.paths.push(path);
      },
    },
    svc: {
      oidc: {
        async token(options: { readonly audience: string }) {
          const result = await channel.request('oidc.token', { audience: options?.audience }, 'ctx.svc.oidc.token');
          // The agent must mask the token before any line that could contain it is forwarded.
          if ('token' in result) secret(result.token);
          return result;
        },
      },
    },
    async attestProvenance(options: AttestProvenanceOptions) {
      const args = {
        subjects: (options?.subjects ?? []).map((s) => ({ path: s?.path })),
        ...(options?.predicate === undefined ? {} : { predicate: jsonCopy('ctx.attestProvenance', options.predicate) as Record<string, unknown> }),
      };
      return channel.request('attest', args, 'ctx.attestProvenance');
    },
  };
}
