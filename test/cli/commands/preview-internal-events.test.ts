// `svc preview` for the events the orchestrator makes itself or receives about other runs:
// workflow_complete, job_complete, workflow_run and lifecycle, built in the shape the
// orchestrator stores and matches (kernel/orchestrator/events/) and matched by workflow/matching
// against a real git checkout; the command in-process (runSvc → runCli) for output and exit codes.
import t from 'tap';
import { compileWorkflows } from '../../../cli/compiler/compile.ts';
import { parseEventSpec } from '../../../cli/preview/local-event.ts';
import { previewEvent, type PreviewResult } from '../../../cli/preview/preview.ts';
import { commitAll, git, runSvc, tempRepo, workflowFile } from '../../fixtures/workflow-trees/index.ts';

const IMPORTS = 'job, push, step, workflow, workflowComplete, jobComplete, workflowRun, lifecycle';
const FILES: Record<string, string> = {
  '.svc/workflows/ci.ts': workflowFile('ci', "push({ branches: ['main'] })", undefined, IMPORTS),
  '.svc/workflows/notify.ts': workflowFile('notify', "workflowComplete({ workflows: ['ci'], statuses: ['failed'] })", undefined, IMPORTS),
  '.svc/workflows/after-test.ts': workflowFile('after-test', "jobComplete({ workflows: ['ci'], jobs: ['test'] })", undefined, IMPORTS),
  '.svc/workflows/mirror.ts': workflowFile('mirror', "workflowRun({ workflows: ['Build site'], conclusions: ['success'], branches: ['main'] })", undefined, IMPORTS),
  '.svc/workflows/registry.ts': workflowFile('registry', "lifecycle({ events: ['registration.updated'] })", undefined, IMPORTS),
};

/** The workflows, committed with their lock (so each preview reads the lock instead of compiling). */
async function repository(t: Parameters<typeof tempRepo>[0]): Promise<string> {
  const dir = tempRepo(t, FILES, { git: true });
  await compileWorkflows({ repoRoot: dir, mode: 'write' });
  commitAll(dir, 'workflows');
  git(dir, ['remote', 'add', 'origin', 'git@github.com:acme/shop.git']);
  return dir;
}

const matched = (result: PreviewResult): string[] => result.matched.map((m) => m.workflow);
const reason = (result: PreviewResult, workflow: string): string | undefined => result.unmatched.find((u) => u.workflow === workflow)?.reason;

t.test('completion, workflow_run and lifecycle events are built and matched', async (t) => {
  const dir = await repository(t);

  const failed = await previewEvent({ cwd: dir, event: 'workflow_complete:ci:failed' });
  t.same(matched(failed), ['notify']);
  t.equal(failed.event.type, 'workflow_complete');
  t.match(failed.label, /^workflow_complete of workflow ci \(failed\) in acme\/shop$/);
  const succeeded = await previewEvent({ cwd: dir, event: 'workflow_complete:ci' });
  t.same(matched(succeeded), [], 'the status defaults to success');
  t.match(reason(succeeded, 'notify'), /statuses fail: .*"success"/);
  t.match(reason(succeeded, 'ci'), /no workflow_complete trigger/);

  const test = await previewEvent({ cwd: dir, event: 'job_complete:ci:test' });
  t.same(matched(test), ['after-test']);
  const lint = await previewEvent({ cwd: dir, event: 'job_complete:ci:lint:failed' });
  t.same(matched(lint), []);
  t.match(reason(lint, 'after-test'), /jobs fail: .*"lint"/);

  const run = await previewEvent({ cwd: dir, event: 'workflow_run:Build site', branch: 'main' });
  t.same(matched(run), ['mirror'], 'a workflow name with a space');
  const runFailed = await previewEvent({ cwd: dir, event: 'workflow_run:Build site:failure', branch: 'main' });
  t.match(reason(runFailed, 'mirror'), /conclusions fail: .*"failure"/);
  const requested = await previewEvent({ cwd: dir, event: 'workflow_run:Build site:requested', branch: 'main' });
  t.match(reason(requested, 'mirror'), /actions fail: .*"requested"/);

  const lifecycle = await previewEvent({ cwd: dir, event: 'lifecycle:registration.updated' });
  t.same(matched(lifecycle), ['registry']);
  t.equal(lifecycle.label, 'lifecycle registration.updated in acme/shop');
  const other = await previewEvent({ cwd: dir, event: 'lifecycle:repository.created' });
  t.same(matched(other), []);
});

t.test('event argument grammar for these events', async (t) => {
  t.same(parseEventSpec('workflowComplete:ci:failed'), { kind: 'workflow_complete', qualifier: 'ci:failed' });
  t.same(parseEventSpec('job_complete:ci:test'), { kind: 'job_complete', qualifier: 'ci:test' });
  for (const bad of ['workflow_complete', 'job_complete', 'lifecycle', 'workflow_run', 'lifecycle:a b', 'workflow_complete:ci:', 'workflow_complete:ci::x']) {
    t.throws(() => parseEventSpec(bad), { code: 'SVC_ERR_CLI_USAGE' }, JSON.stringify(bad));
  }
  const dir = await repository(t);
  for (const [bad, message] of [
    ['workflow_complete:ci:maybe', /status "maybe" is not one of success, failed, cancelled/],
    ['job_complete:ci', /job_complete: expected job_complete:<workflow>:<job>\[:<status>\]/],
    ['lifecycle:nope', /lifecycle event "nope" is not one of registration\.updated/],
    ['workflow_run:Build:sideways', /workflow run conclusion \(or requested, in_progress\) "sideways" is not one of success, failure/],
  ] as const) {
    await t.rejects(previewEvent({ cwd: dir, event: bad }), { code: 'SVC_ERR_CLI_USAGE', message }, bad);
  }
});

t.test('the command previews them (in-process CLI)', async (t) => {
  const dir = await repository(t);
  const text = await runSvc(dir, ['preview', 'job_complete:ci:test']);
  t.equal(text.code, 0, text.stderr);
  t.match(text.stdout, /^event: job_complete of job ci\/test \(success\) in acme\/shop$/m);
  t.match(text.stdout, /^match {4}after-test {2}via /m);
  const bad = await runSvc(dir, ['preview', 'lifecycle:nope']);
  t.equal(bad.code, 2, 'a usage error');
  t.match(bad.stderr, /lifecycle event "nope" is not one of/);
});
