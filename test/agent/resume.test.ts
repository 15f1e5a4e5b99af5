// A job whose agent is killed mid-job resumes after its last finished step (docs/agent.md "When
// an agent restarts mid-job"), with REAL parts: the in-process orchestrator on real PostgreSQL,
// `svc-agent` as a real process (SIGKILLed by the pid this test started, then started again with
// the same id, token and work dir), the real step runner, a real git checkout. Step `one` sets an
// output, an env variable and two PATH entries (one outside the workspace, one inside it); `two`
// appends to a counter file outside the workspace; `three` waits for a gate file this test
// creates only once the agent is dead. Finished steps do not run again and step three, run again
// because it has a check, sees step one's output and environment. A second agent runs the same
// job shape without a check on the interrupted step: that step fails with the reason instead of
// running twice. The recovery window is long (no waiting it out); nothing here sleeps.
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { InFlightStore } from '../../agent/jobs/in-flight.ts';
import { createAgentToken } from '../../kernel/orchestrator/dispatch/tokens.ts';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { REPO_ROOT, startProgram, MIN_PROGRAM_TIMEOUT_MS, type StartedProgram } from '../fixtures/programs.ts';
import { insertRun, jobRow, until } from '../fixtures/runs.ts';
import { startNode } from '../kernel/orchestrator/dispatch/harness.ts';
import { gitRepo, makeTree, tempDir } from './fixtures/trees.ts';

const workflow = (dir: string) => `import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { job, push, step, workflow } from 'svc/sdk';

const mark = (what: string) => appendFileSync(${JSON.stringify(join(dir, 'counter'))}, what + '\\n');
const gate = async (name: string) => {
  // The test opens the gate only after the agent that ran this step was killed.
  while (!existsSync(${JSON.stringify(dir)} + '/' + name)) await new Promise((r) => setTimeout(r, 50));
};
const one = step('one', async (ctx) => {
  mark('one');
  ctx.setEnv('RESUME_GREETING', 'hello from one');
  ctx.addPath(${JSON.stringify(join(dir, 'tools'))});
  ctx.addPath(ctx.repoRoot + '/bin');
  return { answer: 'forty-two' };
});
const two = step('two', async () => { mark('two'); });

export default workflow('ci', {
  on: push(),
  jobs: {
    checked: job({
      runsOn: 'resume-checked',
      steps: [
        one,
        two,
        step('three', async (ctx) => {
          mark('three');
          await gate('gate-checked');
          const tool = await ctx.$\`resume-tool\`;
          const local = await ctx.$\`repo-tool\`;
          writeFileSync(${JSON.stringify(join(dir, 'result.json'))}, JSON.stringify({
            answer: ctx.outputsOf('one').answer,
            greeting: process.env.RESUME_GREETING,
            tool: tool.stdout.trim(),
            local: local.stdout.trim(),
          }));
        }, { check: () => ({ drift: true, reason: 'always deploys' }) }),
      ],
    }),
    unchecked: job({
      runsOn: 'resume-unchecked',
      steps: [
        step('first', async () => { mark('first'); }),
        step('deploy', async () => { mark('deploy'); await gate('gate-unchecked'); }),
        step('after', async () => { mark('after'); }),
      ],
    }),
  },
});
`;

const silent = pino({ level: 'silent' });
// A hang guard only: four agent starts take most of the time, and much longer on a loaded machine.
t.setTimeout(600_000);

t.test('an agent killed mid-job: the job resumes after its last finished step', async (t) => {
  await eachDatabase(t, async (t, db) => {
    // A window of 2 x 10 min: the restart lands inside it however slow the machine is.
    const node = await startNode(t, db.url, { SVC_AGENT_AUTH: 'token', SVC_AGENT_MAX_RECONNECT_DELAY_MS: '600000' });
    const token = (await createAgentToken(db.pool, { description: 'resume test' })).token;
    const tmp = await tempDir('svc-agent-resume-');
    t.teardown(tmp.cleanup);
    const shared = join(tmp.dir, 'shared');
    const tools = join(shared, 'tools');
    await mkdir(tools, { recursive: true });
    await writeFile(join(tools, 'resume-tool'), '#!/bin/sh\necho tool-from-outside\n');
    await chmod(join(tools, 'resume-tool'), 0o755);

    const tree = await makeTree(join(tmp.dir, 'repo'), { '.svc/workflows/ci.ts': workflow(shared), 'bin/repo-tool': '#!/bin/sh\necho tool-from-checkout\n' });
    await chmod(join(tree.dir, 'bin', 'repo-tool'), 0o755);
    const sha = await gitRepo(tree.dir);
    const steps = (names: string[]) => ({ steps: names.map((name) => ({ name, hasOutputs: false })) });
    const runs = {
      checked: await insertRun(db.pool, { contentHash: tree.contentHash, jobs: [{ name: 'checked', runsOn: ['resume-checked'], lock: steps(['one', 'two', 'three']) }] }),
      unchecked: await insertRun(db.pool, { contentHash: tree.contentHash, jobs: [{ name: 'unchecked', runsOn: ['resume-unchecked'], lock: steps(['first', 'deploy', 'after']) }] }),
    };
    for (const run of Object.values(runs)) {
      await db.pool.query(sql.unsafe`
        UPDATE runs SET sha = ${sha}, event = jsonb_set(event, '{repository,cloneUrl}', to_jsonb(${`file://${tree.dir}`}::text)) WHERE id = ${run.runId}`);
    }
    const checkedId = runs.checked.jobs['checked']!.id;
    const uncheckedId = runs.unchecked.jobs['unchecked']!.id;

    const agentEnv = (name: string) => ({
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      SVC_ORCHESTRATOR_URL: node.url,
      SVC_AGENT_TOKEN: token,
      SVC_AGENT_ID: `resume-${name}`,
      SVC_AGENT_LABELS: `resume-${name}`,
      SVC_AGENT_WORK_DIR: join(tmp.dir, `agent-${name}`),
      SVC_AGENT_SANDBOX: 'process',
      // The counter and gate files are outside the workspace, where bwrap would make them read-only.
      SVC_AGENT_BWRAP: 'never',
      SVC_AGENT_LOG_LEVEL: 'warn',
    });
    const started: StartedProgram[] = [];
    t.teardown(async () => {
      // SIGTERM: an agent stops its runners (its spare one too) before it exits; a SIGKILLed agent
      // left them writing into its work directory while the directory was removed (ENOTEMPTY).
      for (const agent of started) {
        const stopped = agent.stop('SIGTERM');
        const late = setTimeout(() => void agent.stop('SIGKILL'), 15_000);
        await stopped;
        clearTimeout(late);
      }
    });
    const start = async (name: string) => {
      const agent = await startProgram(join(REPO_ROOT, 'bin/svc-agent.ts'), 'svc-agent', { env: agentEnv(name), readyTimeoutMs: MIN_PROGRAM_TIMEOUT_MS });
      started.push(agent);
      return agent;
    };
    const counter = async () => (existsSync(join(shared, 'counter')) ? (await readFile(join(shared, 'counter'), 'utf8')).trim().split('\n') : []);
    const times = async (what: string) => (await counter()).filter((l) => l === what).length;
    /** The agent's own sealed record says the step is running: a kill now interrupts it. */
    const recordedRunning = (name: string, jobId: string, step: string) =>
      until(`${step} recorded as running`, async () => {
        const store = new InFlightStore(join(tmp.dir, `agent-${name}`), `resume-${name}`, token);
        await store.load(silent);
        return store.progressOf(jobId)?.running?.name === step ? true : undefined;
      }, 60_000, 50);
    const terminal = (jobId: string) =>
      until(`job ${jobId} finished`, async () => {
        const row = await jobRow(db.pool, jobId);
        return ['completed', 'failed', 'cancelled'].includes(row.status) ? row : undefined;
      }, 120_000, 50);
    const stepsOf = async (jobId: string) =>
      (await db.pool.any(sql.unsafe`SELECT name, status, reason FROM job_steps WHERE job_id = ${jobId} ORDER BY index`)) as unknown as Array<{ name: string; status: string; reason: string | null }>;
    const logOf = async (jobId: string) =>
      ((await db.pool.any(sql.unsafe`SELECT lines FROM job_logs WHERE job_id = ${jobId} ORDER BY seq`)) as unknown as Array<{ lines: Array<{ text: string }> }>)
        .flatMap((r) => r.lines.map((l) => l.text))
        .join('\n');

    const first = await Promise.all([start('checked'), start('unchecked')]);
    await recordedRunning('checked', checkedId, 'three');
    await recordedRunning('unchecked', uncheckedId, 'deploy');
    for (const agent of first) {
      t.ok(agent.child.kill('SIGKILL'), `SIGKILL to agent pid ${agent.child.pid}`);
      await agent.stop();
    }
    for (const jobId of [checkedId, uncheckedId]) {
      const row = await until('recovering', async () => {
        const r = await jobRow(db.pool, jobId);
        return r.status === 'recovering' ? r : undefined;
      }, 60_000, 50);
      t.equal(row.status, 'recovering', 'the orchestrator holds the job for its agent');
    }
    await writeFile(join(shared, 'gate-checked'), '');
    await writeFile(join(shared, 'gate-unchecked'), '');
    await Promise.all([start('checked'), start('unchecked')]);

    const checked = await terminal(checkedId);
    t.equal(checked.status, 'completed', checked.status === 'completed' ? 'the resumed job completes' : `${checked.reason ?? ''}\n${await logOf(checkedId)}`);
    t.equal(checked.attempts, 1, 'the same dispatch: nothing re-dispatched');
    t.equal(await times('one'), 1, 'step one ran exactly once');
    t.equal(await times('two'), 1, 'step two ran exactly once');
    t.equal(await times('three'), 2, 'step three (with a check) ran again from its start');
    t.same(JSON.parse(await readFile(join(shared, 'result.json'), 'utf8')), {
      answer: 'forty-two',
      greeting: 'hello from one',
      tool: 'tool-from-outside',
      local: 'tool-from-checkout',
    }, 'step three sees step one output, setEnv and both addPath entries');
    t.same((await stepsOf(checkedId)).map((s) => [s.name, s.status]), [['one', 'completed'], ['two', 'completed'], ['three', 'completed']]);
    const log = await logOf(checkedId);
    t.match(log, 'resumed after an agent restart: not run again: one, two');
    t.match(log, 'running it again from its start (it has a check)');

    const unchecked = await terminal(uncheckedId);
    t.equal(unchecked.status, 'failed', 'the interrupted step without a check is not run twice: the job fails');
    t.match(unchecked.reason ?? '', /step "deploy" failed: the agent restarted while this step was running; it is not run again/);
    t.equal(await times('first'), 1, 'its finished step ran once');
    t.equal(await times('deploy'), 1, 'the interrupted step ran once');
    t.equal(await times('after'), 0, 'nothing after it ran');
    t.same((await stepsOf(uncheckedId)).map((s) => [s.name, s.status]), [['first', 'completed'], ['deploy', 'failed'], ['after', 'skipped']]);
    t.same(
      await readdir(join(tmp.dir, 'agent-checked', 'in-flight')),
      [],
      'the job records (dispatch and progress) are gone once the job ended',
    );
  });
});
