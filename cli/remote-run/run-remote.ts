// `svc run remote <fixture>` end to end (docs/run-remote.md): compile the working tree in
// memory, pack and seal the overlay, upload it through a pre-signed URL obtained via the relay,
// ask the relay for the runs of each fixture, then follow them (progress, live logs) to a result.
import { writeFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { InputError, isSvcError, messageOf, UnavailableError } from '../../core/errors.ts';
import { sealBox } from '../../core/remote-run-box.ts';
import type { RunView } from '../../schemas/wire/relay.ts';
import type { RemoteRunBody } from '../../schemas/http/remote-run.ts';
import { compileWorkflows } from '../compiler/compile.ts';
import { findProjectRoot } from '../compiler/project-root.ts';
import { readLocalGitState } from '../preview/local-git-state.ts';
import type { PlatformClient } from '../platform-client.ts';
import { TextPrinter } from '../commands/runs/logs.ts';
import { fixtureOptions, loadFixtures, selectFixtures, type LoadedFixture } from './fixtures.ts';
import { junitXml, type JunitRun } from './junit.ts';
import { remoteTestLines } from './tests-lines.ts';
import { checkUploadSize, megabytes, overlayPaths, packOverlay, UPLOAD_LIMITS, type UploadLimits } from './overlay.ts';
import { overlaidTree } from './overlaid-tree.ts';
import { planFixture } from './plan.ts';
import { remoteSecrets } from './secrets.ts';
import { formatDuration } from '../../core/durations.ts';

export const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'skipped']);
const PASSED = new Set(['completed', 'skipped']);
export const POLL_MS = 1_000;

export interface RemoteRunOptions {
  cwd: string;
  client: PlatformClient;
  /** Fixture ids to run (already chosen: by name or glob, --all, --pick). */
  fixtures: readonly LoadedFixture[];
  root: string;
  workflow?: string;
  parallel: boolean;
  quiet: boolean;
  json: boolean;
  junit?: string;
  noWait: boolean;
  env: readonly string[];
  context: readonly string[];
  debug: boolean;
  out(line: string): void;
  err(line: string): void;
  /** Progress lines (a terminal, not --quiet or --json). */
  progress: boolean;
  limits?: UploadLimits;
  pollMs?: number;
  signal?: AbortSignal;
}

export interface RemoteRunOutcome {
  fixture: string;
  workflow: string;
  runId: string | null;
  status: string;
  reason: string | null;
  durationMs: number | null;
  jobs: Array<{ name: string; status: string; reason: string | null }>;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/** Fixtures of the project at `cwd` (for listing and selection). */
export async function projectFixtures(cwd: string): Promise<{ root: string; fixtures: LoadedFixture[] }> {
  const { root, found } = findProjectRoot(cwd);
  if (!found) throw new InputError('SVC_ERR_COMPILE_SVC_DIR_MISSING', `no .svc/ directory in ${root} or above: run \`svc init\` first`);
  return { root, fixtures: await loadFixtures(root) };
}

export { selectFixtures };

async function upload(url: string, body: Buffer, signal?: AbortSignal): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, { method: 'PUT', body, headers: { 'content-type': 'application/octet-stream' }, ...(signal === undefined ? {} : { signal }) });
  } catch (error) {
    throw new UnavailableError('SVC_ERR_REMOTE_RUN_UPLOAD', `the overlay upload failed: ${messageOf((error as { cause?: unknown }).cause ?? error)}`);
  }
  if (!response.ok) throw new UnavailableError('SVC_ERR_REMOTE_RUN_UPLOAD', `the overlay upload failed: storage answered ${response.status} ${(await response.text()).slice(0, 200)}`);
}

interface Created {
  fixture: string;
  workflow: string;
  runId: string;
}

/** Creates the runs of every fixture; a fixture that matches nothing is an outcome, not an error. */
async function createAll(options: RemoteRunOptions, base: Omit<RemoteRunBody, 'fixture' | 'repository' | 'sha' | 'ref' | 'event' | 'changedFiles' | 'workflows' | 'contexts'>, state: NonNullable<Awaited<ReturnType<typeof readLocalGitState>>>, lock: Parameters<typeof planFixture>[2]): Promise<{ created: Created[]; missed: RemoteRunOutcome[] }> {
  const created: Created[] = [];
  const missed: RemoteRunOutcome[] = [];
  const one = async (loaded: LoadedFixture) => {
    const fixture = await fixtureOptions(loaded);
    const plan = await planFixture(fixture, state, lock);
    let workflows = plan.matched;
    if (options.workflow !== undefined) workflows = workflows.filter((w) => w.name === options.workflow);
    if (options.debug) for (const u of plan.unmatched) options.err(`debug: ${loaded.id}: ${u.workflow} not matched: ${u.reason}`);
    if (workflows.length === 0) {
      const why = options.workflow !== undefined ? `workflow "${options.workflow}" does not match the fixture's event` : 'no workflow matches the fixture\'s event';
      missed.push({ fixture: loaded.id, workflow: options.workflow ?? '', runId: null, status: 'not-run', reason: why, durationMs: null, jobs: [] });
      return;
    }
    const result = await options.client.createRemoteRuns({
      ...base,
      fixture: loaded.id,
      repository: plan.repository,
      sha: plan.sha,
      ref: plan.ref,
      event: plan.event,
      changedFiles: plan.changedFiles,
      workflows,
      ...(fixture.secrets === undefined ? {} : { contexts: { ...fixture.secrets } }),
    });
    for (const w of result.warnings) options.err(`warning: ${w}`);
    for (const r of result.runs) {
      created.push({ fixture: loaded.id, workflow: r.workflow, runId: r.runId });
      if (options.progress) options.err(`${loaded.id} › ${r.workflow}: run ${r.runId} queued`);
    }
  };
  if (options.parallel) await Promise.all(options.fixtures.map(one));
  else for (const f of options.fixtures) await one(f);
  return { created, missed };
}

/** Polls a run to its end; with `logs`, prints its log lines as they arrive. */
async function follow(options: RemoteRunOptions, run: Created, logs: boolean): Promise<RunView> {
  const printer = new TextPrinter((line) => options.out(line));
  let cursor: string | undefined;
  let failures = 0;
  let lastStatus = '';
  for (;;) {
    try {
      if (logs) {
        for (;;) {
          const page = await options.client.runLogs(run.runId, cursor);
          cursor = page.cursor;
          printer.print(page.lines);
          if (!page.more) break;
        }
      }
      const view = await options.client.showRun(run.runId);
      failures = 0;
      if (options.progress && view.status !== lastStatus) options.err(`${run.fixture} › ${run.workflow}: ${view.status}`);
      lastStatus = view.status;
      if (TERMINAL.has(view.status)) {
        if (logs) {
          // The lines written before the end.
          for (;;) {
            const page = await options.client.runLogs(run.runId, cursor);
            cursor = page.cursor;
            printer.print(page.lines);
            if (!page.more) break;
          }
        }
        return view;
      }
    } catch (error) {
      if (!(isSvcError(error) && error.kind === 'unavailable') || ++failures > 10) throw error;
    }
    if (options.signal?.aborted) throw new InputError('SVC_ERR_REMOTE_RUN_INTERRUPTED', `interrupted; run ${run.runId} goes on (svc runs show ${run.runId})`);
    await sleep(options.pollMs ?? POLL_MS, options.signal);
  }
}

function outcomeOf(run: Created, view: RunView): RemoteRunOutcome {
  return {
    fixture: run.fixture,
    workflow: run.workflow,
    runId: run.runId,
    status: view.status,
    reason: view.reason,
    durationMs: view.durationMs,
    jobs: view.jobs.filter((j) => j.kind === 'job').map((j) => ({ name: j.displayName, status: j.status, reason: j.reason })),
  };
}

function resultLine(o: RemoteRunOutcome): string {
  const mark = PASSED.has(o.status) ? '✓' : '✗';
  const took = o.durationMs === null ? '' : ` in ${formatDuration(o.durationMs)}`;
  const why = o.reason === null || PASSED.has(o.status) ? '' : ` (${o.reason})`;
  return `${mark} ${o.fixture}${o.workflow === '' ? '' : ` › ${o.workflow}`}: ${o.status}${took}${why}${o.runId === null ? '' : `  run ${o.runId}`}`;
}

export async function runRemote(options: RemoteRunOptions): Promise<{ outcomes: RemoteRunOutcome[]; passed: boolean }> {
  const started = performance.now();
  const marks: string[] = [];
  const mark = (what: string) => void marks.push(`${what} ${(performance.now() - started).toFixed(0)} ms`);
  const state = await readLocalGitState(options.root);
  mark('git state');
  if (state === undefined) throw new InputError('SVC_ERR_REMOTE_RUN_NOT_GIT', `${options.root} is not in a git repository: a remote run applies the working tree's changes on top of a commit`);
  const paths = await overlayPaths(state.top);
  // The lock of the tree the agents will run (HEAD + overlay), not of every local file.
  const tree = await overlaidTree(state.top, options.root, paths);
  let compiled: Awaited<ReturnType<typeof compileWorkflows>>;
  try {
    compiled = await compileWorkflows({ repoRoot: tree.root, mode: 'memory' });
  } finally {
    await tree.remove();
  }
  mark('compiled');
  const lockPath = relative(state.top, join(options.root, '.svc', 'svc.lock.json')).split(sep).join('/');
  const overlay = await packOverlay(state.top, paths, [{ path: lockPath, text: compiled.text }]);
  mark('overlay packed');
  const secrets = await remoteSecrets(options.root, options.env, options.context);
  const slot = await options.client.remoteUpload();
  mark('upload slot');
  const publicKey = Buffer.from(slot.publicKey, 'base64');
  const box = sealBox(publicKey, overlay.packed);
  if (checkUploadSize(box.length, options.limits ?? UPLOAD_LIMITS) === 'warn') {
    options.err(`warning: the working-tree overlay is ${megabytes(box.length)} MB (over ${megabytes((options.limits ?? UPLOAD_LIMITS).warnBytes)} MB); consider .svcignore for large generated files`);
  }
  if (options.progress) options.err(`uploading the working-tree overlay: ${overlay.files.length} file(s), ${overlay.deleted.length} deleted, ${megabytes(box.length)} MB sealed`);
  mark('sealed');
  await upload(slot.uploadUrl, box, options.signal);
  mark('uploaded');
  const secretsBox = Object.keys(secrets).length === 0 ? undefined : sealBox(publicKey, Buffer.from(JSON.stringify(secrets))).toString('base64');
  const base = { uploadId: slot.uploadId, lockfileHash: compiled.lock.lockfileHash ?? null, ...(secretsBox === undefined ? {} : { secretsBox }) };
  const { created, missed } = await createAll(options, base, state, compiled.lock);
  mark('runs created');
  if (options.debug) options.err(`debug: timings: ${marks.join(', ')}`);
  if (options.noWait) {
    for (const c of created) options.out(options.json ? JSON.stringify({ fixture: c.fixture, workflow: c.workflow, runId: c.runId, status: 'queued' }) : c.runId);
    for (const m of missed) options.err(resultLine(m));
    return { outcomes: [...created.map((c) => ({ fixture: c.fixture, workflow: c.workflow, runId: c.runId, status: 'queued', reason: null, durationMs: null, jobs: [] })), ...missed], passed: true };
  }
  // Live logs only when one run at a time prints (not --parallel with several, not --quiet/--json).
  const logs = !options.quiet && !options.json && (!options.parallel || created.length === 1);
  const views = new Map<string, RunView>();
  const finish = async (c: Created) => {
    const view = await follow(options, c, logs);
    views.set(c.runId, view);
    const outcome = outcomeOf(c, view);
    options.out(options.json ? JSON.stringify(outcome) : resultLine(outcome));
    if (!options.json && !options.quiet) for (const line of await remoteTestLines(options.client, c.runId)) options.out(line);
  };
  if (options.parallel) await Promise.all(created.map(finish));
  else for (const c of created) await finish(c);
  for (const m of missed) options.out(options.json ? JSON.stringify(m) : resultLine(m));
  const outcomes = [...created.map((c) => outcomeOf(c, views.get(c.runId)!)), ...missed];
  if (options.junit !== undefined) {
    const runs: JunitRun[] = [
      ...created.map((c) => ({ fixture: c.fixture, workflow: c.workflow, runId: c.runId, run: views.get(c.runId) ?? null })),
      ...missed.map((m) => ({ fixture: m.fixture, workflow: m.workflow || '(none)', runId: '', run: null, error: m.reason ?? 'not run' })),
    ];
    await writeFile(options.junit, junitXml(runs));
  }
  return { outcomes, passed: outcomes.every((o) => PASSED.has(o.status)) };
}
