// `svc run <event> --local`: plan (compile in memory, synthetic event, match), prepare the
// caches like a build job would (source bundle of the working tree's `.svc/` over the repository's
// files at HEAD — with `uncommitted`, the working tree's changes too — npm ci once), then run every
// matched workflow's jobs on this machine through the agent's job executor and the real step
// runner, printing masked step logs as they stream and a summary per job.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startLocalFileServer } from './host/file-server.ts';
import { LocalHub, type EmittedEvent } from './host/hub.ts';
import { localTestsLines, localTestsSummary, type LocalTestsSummary } from './tests-summary.ts';
import { localAgentEnvironment, localSources } from './host/prepare.ts';
import type { RepoFilesOrigin } from './host/repo-files.ts';
import { runLocalWorkflow, type LocalJobResult } from './host/run-jobs.ts';
import { SecretSet } from '../../agent/logs/masker.ts';
import { parsePassEnv, passedEnvOf } from '../../agent/env.ts';
import { SvcError, messageOf } from '../../core/errors.ts';
import type { FilterVerdict } from '../../workflow/matching/index.ts';
import { planLocalRun } from './plan.ts';
import { checkJobNames, selectJobs } from './select-jobs.ts';
import { RunPrinter } from './printer.ts';
import { loadLocalSecrets } from './secrets.ts';
import { localInstall } from './install.ts';
import { formatDuration } from '../../core/durations.ts';

export interface LocalRunOptions {
  cwd: string;
  event: string;
  branch?: string;
  /** `--uncommitted`: jobs get the working tree's tracked changes and untracked, not ignored files on top of HEAD. */
  uncommitted?: boolean;
  /** `--env KEY=VALUE` flags. */
  env: readonly string[];
  /** `--pass-env`: which of the user's variables the jobs get (SVC_AGENT_PASS_ENV's syntax); default SVC_AGENT_PASS_ENV, else the agent's defaults. */
  passEnv?: string;
  /** The user's environment the passed variables come from (default process.env). */
  shellEnv?: Readonly<Record<string, string | undefined>>;
  /** `--job`: only these jobs and the jobs they need (select-jobs.ts); empty or absent: every job. */
  jobs?: readonly string[];
  /** Quiet time before a step's "still running" line (default 60 s; tests shorten it). */
  quietNoticeMs?: number;
  debug: boolean;
  /** Where step logs and progress go (stdout normally, stderr under --json). */
  write(text: string): void;
  /** Diagnostics (--debug): always stderr. */
  diag(text: string): void;
  signal?: AbortSignal;
}

export interface LocalWorkflowSummary {
  workflow: string;
  trigger: string;
  status: 'completed' | 'failed';
  jobs: Array<Omit<LocalJobResult, 'jobId'>>;
}

export interface LocalRunSummary {
  event: string;
  sha: string | null;
  /** Where the jobs' repository files came from, and how many (null when nothing ran). */
  files: { origin: RepoFilesOrigin; count: number } | null;
  status: 'completed' | 'failed' | 'no_match';
  workflows: LocalWorkflowSummary[];
  unmatched: Array<{ workflow: string; reason: string }>;
  emitted: Array<{ job: string; eventName: string; payload: unknown; deliveryId: string }>;
  /** Secret names and where they came from (never values). */
  secrets: Record<string, string>;
  /** The jobs' test results (docs/test-results.md); absent when no step reported any. */
  tests?: LocalTestsSummary;
  warnings: string[];
}

const ZERO_SHA = '0'.repeat(40);
const stepLabel = (step: string): string => (step === '(setup)' ? 'setup' : step);
const seconds = (ms: number | null): string => formatDuration(ms, '');

function verdictLines(verdicts: readonly FilterVerdict[]): string[] {
  return verdicts.map((v) => `    ${`${v.triggerType}#${v.trigger}`.padEnd(16)} ${v.filter.padEnd(13)} ${v.verdict.padEnd(13)} ${v.detail}`);
}

export async function runLocal(options: LocalRunOptions): Promise<LocalRunSummary> {
  // The agent's pass-through policy, applied to the user's shell: proxy and CA settings reach the
  // jobs (and the .svc/ install) as they reach the user's own npm; checked before anything runs.
  const shellEnv = options.shellEnv ?? process.env;
  const passNames = parsePassEnv(options.passEnv ?? shellEnv['SVC_AGENT_PASS_ENV'], options.passEnv === undefined ? 'SVC_AGENT_PASS_ENV' : '--pass-env');
  const passedEnv = passedEnvOf(passNames, shellEnv);
  const plan = await planLocalRun({ cwd: options.cwd, event: options.event, ...(options.branch === undefined ? {} : { branch: options.branch }) });
  const secrets = await loadLocalSecrets(plan.root, options.env);
  const mask = new SecretSet();
  for (const value of Object.values(secrets.values)) mask.add(value);
  const say = (text: string) => options.write(`${mask.mask(text)}\n`);
  for (const w of plan.warnings) options.diag(`warning: ${w}\n`);
  // One line when the jobs cannot get a commit's tree.
  if (!plan.inGit || plan.state.sha === null) {
    const why = plan.inGit ? 'no commit yet' : 'not a git repository';
    const event = plan.inGit ? '' : options.branch === undefined ? '; the event has no commit and no branch (name one with --branch)' : '; the event has no commit';
    options.diag(`note: ${why}: the jobs get the working tree's files (without what .gitignore and .svcignore exclude)${event}\n`);
  }
  say(`event: ${plan.label}`);
  if (options.debug) {
    for (const m of plan.matched) options.diag([`match    ${m.entry.name} via ${m.trigger}`, ...verdictLines(m.verdicts), ''].join('\n'));
    for (const u of plan.unmatched) options.diag([`no match ${u.workflow}: ${u.reason}`, ...verdictLines(u.verdicts), ''].join('\n'));
    for (const [k, source] of Object.entries(secrets.sources)) options.diag(`secret ${k} from ${source}\n`);
    options.diag(`passed to jobs from this shell: ${Object.keys(passedEnv).join(', ') || 'nothing'} (policy: ${passNames.length} name(s))\n`);
  }
  const summary: LocalRunSummary = {
    event: plan.label,
    sha: plan.state.sha,
    files: null,
    status: 'no_match',
    workflows: [],
    unmatched: plan.unmatched.map((u) => ({ workflow: u.workflow, reason: u.reason })),
    emitted: [],
    secrets: secrets.sources,
    warnings: plan.warnings,
  };
  if (plan.matched.length === 0) {
    say(`no workflow matches ${options.event}; nothing to run (see \`svc preview ${options.event} --debug\`)`);
    return summary;
  }

  const only = options.jobs ?? [];
  checkJobNames(plan.matched.map((m) => m.entry), only);
  const names = new Map<string, string>();
  const label = (jobId: string) => names.get(jobId) ?? jobId;
  const emitted: EmittedEvent[] = [];
  const printer = new RunPrinter(say);
  const later = (at: string, ms: number) => new Date(Date.parse(at) + ms).toISOString();
  const hub = new LocalHub({
    onLog: (jobId, lines) => {
      for (const line of lines) printer.add(jobId, line.at, `[${label(jobId)}] ${stepLabel(line.step)} | ${line.text}`);
    },
    onStep: (m) => {
      // A step's own last lines carry the same millisecond as its end: print them first.
      if (m.status === 'running') printer.add(m.jobId, m.at, `[${label(m.jobId)}] ==> ${m.name}`);
      else printer.add(m.jobId, later(m.at, 1), `[${label(m.jobId)}] <== ${m.name} ${m.status}${m.reason === undefined ? '' : `: ${m.reason}`}`);
    },
    onStatus: (m) => {
      if (m.status === 'running') return;
      printer.flushJob(m.jobId);
      say(`[${label(m.jobId)}] job ${m.status}${m.reason === undefined ? '' : `: ${m.reason}`}`);
    },
    onEmit: (event) => {
      emitted.push(event);
      printer.add(event.jobId, new Date().toISOString(), `[${label(event.jobId)}] emit ${event.eventName} ${JSON.stringify(event.payload)} (recorded, not delivered: local run)`);
    },
  });

  const workDir = await mkdtemp(join(tmpdir(), 'svc-local-run-'));
  const files = await startLocalFileServer();
  const abort = new AbortController();
  const onAbort = () => abort.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const logger = options.debug ? pino({ level: 'debug', name: 'svc-local-agent' }, pino.destination({ fd: 2, sync: true })) : pino({ level: 'silent' });
    const bwrapSetting = process.env['SVC_AGENT_BWRAP'];
    const env = await localAgentEnvironment({ logger, ...(bwrapSetting === 'always' || bwrapSetting === 'never' || bwrapSetting === 'auto' ? { bwrap: bwrapSetting } : {}) });
    const sources = localSources({
      repoRoot: plan.root,
      lockText: plan.lockText,
      workDir,
      files,
      signal: abort.signal,
      passedEnv,
      log: (text) => say(`[local] ${text}`),
      repo: { git: plan.inGit ? { top: plan.state.top, sha: plan.state.sha } : null, uncommitted: options.uncommitted === true },
    });
    const base = {
      sha: plan.state.sha ?? ZERO_SHA,
      ref: plan.event.ref,
      repository: plan.state.repository,
      event: plan.event,
      changedFiles: plan.changedFiles,
      env: {},
      secrets: secrets.values,
      isTestRun: true,
    };
    // First, so a failure to gather them is reported as such (not as a dependency install's).
    const staged = await sources.repoFiles();
    summary.files = { origin: staged.origin, count: staged.files };
    const deps = await sources.deps(localInstall(plan.matched.map((m) => m.entry), secrets.values)).catch((error: unknown) => {
      throw new SvcError('SVC_ERR_LOCAL_RUN_DEPS', `installing the .svc/ dependencies failed: ${messageOf(error)}`, { cause: error });
    });
    const results = await Promise.all(
      plan.matched.map((m) => ({ ...m, entry: selectJobs(m.entry, only) })).map(async (m): Promise<LocalWorkflowSummary> => {
        const source = await sources.source(m.entry.hashFiles);
        say(`workflow ${m.entry.name} (via ${m.trigger}): ${m.entry.jobs.map((j) => j.name).join(', ') || 'no jobs'}`);
        // A local job gets the files of your checkout, not a fetch: say what that means for these two.
        for (const job of m.entry.jobs.filter((j) => j.checkout.submodules || j.checkout.lfs)) {
          say(`[local] job ${job.name}: checkout.submodules/lfs are not fetched by a local run; the job gets your checkout's files (submodule directories empty, LFS files as your git writes them: content if git-lfs is set up for you, else pointers)`);
        }
        const jobs = await runLocalWorkflow({
          workflow: m.entry,
          base,
          source: { url: source.url, digest: source.digest },
          deps,
          hub,
          logger,
          workRoot: join(workDir, 'agent'),
          sandboxes: env.sandboxes,
          defaultSandbox: env.defaultSandbox,
          runnerPath: env.runnerPath,
          readPaths: env.readPaths,
          sdkVersion: env.sdkVersion,
          passedEnv,
          ...(options.quietNoticeMs === undefined ? {} : { quietNoticeMs: options.quietNoticeMs }),
          signal: abort.signal,
          onStart: (job) => {
            names.set(job.jobId, plan.matched.length > 1 ? `${m.entry.name}/${job.displayName}` : job.displayName);
          },
        });
        const ok = jobs.every((j) => j.status === 'completed');
        return { workflow: m.entry.name, trigger: m.trigger, status: ok ? 'completed' : 'failed', jobs: jobs.map(({ jobId: _id, ...rest }) => ({ ...rest, reason: rest.reason === null ? null : mask.mask(rest.reason) })) };
      }),
    );
    summary.workflows = results;
    summary.status = results.every((w) => w.status === 'completed') ? 'completed' : 'failed';
    summary.emitted = emitted.map((e) => ({ job: label(e.jobId), eventName: e.eventName, payload: e.payload, deliveryId: e.deliveryId }));
    const tests = localTestsSummary(hub.tests, label);
    if (tests !== undefined) summary.tests = tests;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    printer.close();
    await files.close();
    await rm(workDir, { recursive: true, force: true }).catch(() => undefined);
  }
  say('');
  say(`summary: ${summary.status}`);
  for (const w of summary.workflows) {
    say(`  ${w.workflow}: ${w.status}`);
    for (const j of w.jobs) say(`    ${j.status.padEnd(10)} ${j.displayName.padEnd(24)} ${seconds(j.durationMs).padEnd(7)} ${j.reason ?? ''}`.trimEnd());
  }
  for (const e of summary.emitted) say(`  emitted ${e.eventName} from ${e.job} (${e.deliveryId})`);
  for (const line of localTestsLines(summary.tests)) say(line);
  return summary;
}
