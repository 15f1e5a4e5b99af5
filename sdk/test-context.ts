// createTestStepContext: a real step context for unit tests of step functions, outside any
// agent. The shell, environment, outputs, secrets, inputs, matrix, emit and temp files work;
// APIs that need an orchestrator (OIDC, caches, artifacts, provenance) reject unless stubbed.
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { InputError, NotFoundError, UnavailableError } from '../core/errors.ts';
import type {
  ArtifactsApi,
  AttestProvenanceOptions,
  AttestProvenanceResult,
  CacheApi,
  InputValue,
  MatrixCombination,
  OidcApi,
  SdkEvent,
  Shell,
  StepContext,
  StepLogger,
} from './context.ts';
import { createShell } from './shell.ts';

export type TestSecrets =
  | { readonly flat: Readonly<Record<string, string>> }
  | { readonly contexts: Readonly<Record<string, Readonly<Record<string, string>>>> };

export interface TestStepContextOptions<M extends MatrixCombination = MatrixCombination> {
  /** Working directory of `ctx.$`. Default: the current directory. */
  readonly repoRoot?: string;
  readonly secrets?: TestSecrets;
  readonly inputs?: Readonly<Record<string, InputValue>>;
  readonly matrix?: M;
  /** Replaces the real shell. */
  readonly $?: Shell;
  /** Replaces the default logger (which writes to stderr with secret values masked). */
  readonly log?: StepLogger;
  /** Extra environment over the process environment. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly event?: SdkEvent;
  readonly changedFiles?: readonly string[];
  /** What `ctx.outputsOf(step)` returns. */
  readonly stepOutputs?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** What `ctx.jobOutputs(job)` returns. */
  readonly jobOutputs?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Stubs for the orchestrator-backed APIs; each one left out rejects. */
  readonly orchestrator?: {
    readonly oidc?: OidcApi;
    readonly cache?: CacheApi;
    readonly artifacts?: ArtifactsApi;
    readonly attestProvenance?: (options: AttestProvenanceOptions) => Promise<AttestProvenanceResult>;
  };
}

export interface EmitCall {
  readonly name: string;
  readonly payload: unknown;
}

export interface TestStepContext<M extends MatrixCombination = MatrixCombination> {
  readonly ctx: StepContext<any, M>;
  readonly emitCalls: EmitCall[];
  /** Paths given to `ctx.tests.report`, in order. */
  readonly testReports: string[];
  /** Removes every temp directory and file the context made. Safe to call twice. */
  dispose(): Promise<void>;
}

const EVENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/;

function unavailable(api: string): Promise<never> {
  return Promise.reject(
    new UnavailableError(
      'SVC_ERR_SDK_ORCHESTRATOR_REQUIRED',
      `${api} needs a job running on an orchestrator; createTestStepContext rejects it unless options.orchestrator provides a stub`,
    ),
  );
}

function secretsLookup(secrets: TestSecrets | undefined): (key: string) => string | undefined {
  if (secrets === undefined) return () => undefined;
  const hasFlat = 'flat' in secrets && secrets.flat !== undefined;
  const hasContexts = 'contexts' in secrets && secrets.contexts !== undefined;
  if (hasFlat === hasContexts) {
    throw new InputError('SVC_ERR_SDK_TEST_SECRETS', 'options.secrets takes exactly one of { flat } or { contexts }');
  }
  if (hasFlat) {
    const flat = (secrets as { flat: Readonly<Record<string, string>> }).flat;
    return (key) => (Object.hasOwn(flat, key) ? flat[key] : undefined);
  }
  const contexts = (secrets as { contexts: Readonly<Record<string, Readonly<Record<string, string>>>> }).contexts;
  return (key) => {
    const colon = key.indexOf(':');
    if (colon > 0) {
      const context = contexts[key.slice(0, colon)];
      const name = key.slice(colon + 1);
      return context !== undefined && Object.hasOwn(context, name) ? context[name] : undefined;
    }
    const holders = Object.keys(contexts).filter((c) => Object.hasOwn(contexts[c]!, key));
    if (holders.length > 1) {
      throw new InputError(
        'SVC_ERR_STEP_SECRET_AMBIGUOUS',
        `secret ${key} exists in contexts ${holders.sort().join(', ')}: qualify it as <context>:${key}`,
      );
    }
    return holders.length === 1 ? contexts[holders[0]!]![key] : undefined;
  };
}

function jsonCopy(name: string, payload: unknown): unknown {
  if (payload === undefined) return undefined;
  try {
    return JSON.parse(JSON.stringify(payload)) as unknown;
  } catch (error) {
    throw new InputError('SVC_ERR_STEP_EMIT_PAYLOAD', `ctx.emit(${JSON.stringify(name)}): payload must be JSON-serializable`, { cause: error });
  }
}

export function createTestStepContext<M extends MatrixCombination = MatrixCombination>(
  options: TestStepContextOptions<M> = {},
): TestStepContext<M> {
  const repoRoot = options.repoRoot ?? process.cwd();
  const lookup = secretsLookup(options.secrets);
  const env: Record<string, string | undefined> = { ...process.env, ...options.env };
  const masked = new Set<string>();
  const secretOutputs = new Map<string, string>();
  const emitCalls: EmitCall[] = [];
  const testReports: string[] = [];
  let tempRoot: string | undefined;
  let tempCount = 0;
  let disposed = false;

  const mask = (message: string): string => {
    let out = message;
    for (const value of masked) if (value.length > 0) out = out.split(value).join('***');
    return out;
  };
  const write = (level: string) => (message: string, fields?: Readonly<Record<string, unknown>>) => {
    const extra = fields === undefined ? '' : ` ${JSON.stringify(fields)}`;
    process.stderr.write(`${mask(`[${level}] ${message}${extra}`)}\n`);
  };
  const log: StepLogger = options.log ?? { info: write('info'), warn: write('warn'), error: write('error') };

  const root = async (): Promise<string> => {
    if (disposed) throw new InputError('SVC_ERR_SDK_TEST_DISPOSED', 'this test step context was disposed');
    tempRoot ??= await mkdtemp(join(tmpdir(), 'svc-step-'));
    return tempRoot;
  };

  const shell = options.$ ?? createShell({ cwd: repoRoot, env: () => env });

  const ctx: StepContext<any, M> = {
    $: shell,
    env,
    event: options.event ?? { type: 'test' },
    changedFiles: options.changedFiles ?? [],
    inputs: options.inputs ?? {},
    matrix: options.matrix ?? ({} as M),
    repoRoot,
    isTestRun: true,
    log,
    setEnv(key: string, value: string) {
      if (typeof key !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
        throw new InputError('SVC_ERR_STEP_ENV_NAME', `ctx.setEnv: ${JSON.stringify(key)} is not a valid variable name`);
      }
      if (typeof value !== 'string') throw new InputError('SVC_ERR_STEP_ENV_VALUE', `ctx.setEnv(${key}): value must be a string`);
      env[key] = value;
    },
    addPath(dir: string) {
      if (typeof dir !== 'string' || dir === '' || dir.includes(delimiter)) {
        throw new InputError('SVC_ERR_STEP_PATH', `ctx.addPath: ${JSON.stringify(dir)} is not a single directory`);
      }
      env['PATH'] = env['PATH'] ? `${dir}${delimiter}${env['PATH']}` : dir;
    },
    outputsOf(stepName: string) {
      const outputs = options.stepOutputs?.[stepName];
      if (outputs === undefined) {
        throw new NotFoundError('SVC_ERR_STEP_NO_OUTPUTS', `no outputs for step ${JSON.stringify(stepName)} (pass options.stepOutputs)`);
      }
      return outputs;
    },
    jobOutputs(jobName: string) {
      return options.jobOutputs?.[jobName];
    },
    setSecretOutput(key: string, value: string) {
      if (typeof key !== 'string' || key === '' || typeof value !== 'string') {
        throw new InputError('SVC_ERR_STEP_SECRET_OUTPUT', 'ctx.setSecretOutput takes a non-empty key and a string value');
      }
      masked.add(value);
      secretOutputs.set(key, value);
    },
    secrets: {
      get(key: string) {
        const value = lookup(key);
        if (value !== undefined) masked.add(value);
        return value;
      },
    },
    async emit(name: string, payload?: unknown) {
      if (typeof name !== 'string' || !EVENT_NAME.test(name)) {
        throw new InputError('SVC_ERR_STEP_EMIT_NAME', `ctx.emit: ${JSON.stringify(name)} is not a valid event name`);
      }
      emitCalls.push({ name, payload: jsonCopy(name, payload) });
      return { deliveryId: `test-${emitCalls.length}` };
    },
    async mktemp() {
      const base = await root();
      const dir = join(base, `dir-${++tempCount}`);
      await mkdir(dir, { mode: 0o700 });
      return dir;
    },
    async mktempFile(fileOptions?: { readonly suffix?: string }) {
      const suffix = fileOptions?.suffix ?? '';
      if (/[/\\\0]/.test(suffix)) throw new InputError('SVC_ERR_STEP_TEMP_SUFFIX', 'ctx.mktempFile: suffix cannot contain path separators');
      const base = await root();
      const file = join(base, `file-${++tempCount}${suffix}`);
      await writeFile(file, '', { flag: 'wx', mode: 0o600 });
      return file;
    },
    cache: options.orchestrator?.cache ?? {
      restore: () => unavailable('ctx.cache.restore'),
      save: () => unavailable('ctx.cache.save'),
    },
    artifacts: options.orchestrator?.artifacts ?? {
      upload: () => unavailable('ctx.artifacts.upload'),
      download: () => unavailable('ctx.artifacts.download'),
    },
    tests: {
      report(path: string) {
        if (typeof path !== 'string' || path.trim() === '' || path.includes('\0')) {
          throw new InputError('SVC_ERR_STEP_TEST_RESULTS_PATH', 'ctx.tests.report takes the path of a JUnit XML or TAP file');
        }
        testReports.push(path);
      },
    },
    svc: { oidc: options.orchestrator?.oidc ?? { token: () => unavailable('ctx.svc.oidc.token') } },
    attestProvenance: options.orchestrator?.attestProvenance ?? (() => unavailable('ctx.attestProvenance')),
  };

  return {
    ctx,
    emitCalls,
    testReports,
    async dispose() {
      disposed = true;
      if (tempRoot !== undefined) {
        const dir = tempRoot;
        tempRoot = undefined;
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}
