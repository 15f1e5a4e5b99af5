// The agent's opt-in `/metrics` (SVC_AGENT_METRICS_PORT): its settings, the real `svc-agent`
// program serving prom-client's process metrics (event-loop delay, GC pauses) on loopback, and
// the agent's job metrics moving when a real checkout job runs (real git, real agent, script runner).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { parseAgentEnv } from '../../agent/env.ts';
import { startProgram } from '../fixtures/programs.ts';
import { createGitRemote } from '../fixtures/git-repos.ts';
import { dispatchOf, launchAgent } from './fixtures/agent-harness.ts';
import { makeTree, tempDir } from './fixtures/trees.ts';
import { startOrchestratorDouble } from './fixtures/ws-orchestrator.ts';

const bin = fileURLToPath(new URL('../../bin/svc-agent.ts', import.meta.url));
const tmp = await tempDir('svc-agent-metrics-');
t.teardown(tmp.cleanup);
const URL_BASE = 'http://127.0.0.1:1';

/** The value of one series line (`name{labels} value`), or undefined when the scrape lacks it. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function scrape(url: string): Promise<string> {
  const res = await fetch(url);
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  return res.text();
}

t.test('settings: off by default, loopback by default, bad values refused', async (t) => {
  t.equal(parseAgentEnv({ SVC_ORCHESTRATOR_URL: URL_BASE }).metrics, undefined, 'no port: no listener');
  t.same(parseAgentEnv({ SVC_ORCHESTRATOR_URL: URL_BASE, SVC_AGENT_METRICS_PORT: '9464' }).metrics, { port: 9464, host: '127.0.0.1' });
  t.same(parseAgentEnv({ SVC_ORCHESTRATOR_URL: URL_BASE, SVC_AGENT_METRICS_PORT: '0', SVC_AGENT_METRICS_HOST: '0.0.0.0' }).metrics, { port: 0, host: '0.0.0.0' });
  for (const bad of ['-1', '65536', '12ab', '1.5']) {
    t.throws(() => parseAgentEnv({ SVC_ORCHESTRATOR_URL: URL_BASE, SVC_AGENT_METRICS_PORT: bad }), { code: 'SVC_ERR_AGENT_ENV', message: /SVC_AGENT_METRICS_PORT must be a port number/ }, bad);
  }
  t.throws(() => parseAgentEnv({ SVC_ORCHESTRATOR_URL: URL_BASE, SVC_AGENT_METRICS_HOST: '0.0.0.0' }), { message: /SVC_AGENT_METRICS_HOST is set but SVC_AGENT_METRICS_PORT is not/ });
  t.throws(() => parseAgentEnv({ SVC_ORCHESTRATOR_URL: URL_BASE, SVC_AGENT_METRICS_PORT: '1', SVC_AGENT_METRICS_HOST: 'a b' }), { message: /SVC_AGENT_METRICS_HOST must be a host name/ });
});

t.test('the real svc-agent serves event-loop delay and GC pauses on 127.0.0.1', async (t) => {
  const orch = await startOrchestratorDouble({ token: 'good' });
  t.teardown(() => orch.close());
  const agent = await startProgram(bin, 'svc-agent', {
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      SVC_ORCHESTRATOR_URL: orch.url,
      SVC_AGENT_TOKEN: 'good',
      SVC_AGENT_WORK_DIR: join(tmp.dir, 'program'),
      SVC_AGENT_LOG_LEVEL: 'info',
      SVC_AGENT_METRICS_PORT: '0',
    },
    readyTimeoutMs: 120_000,
  });
  t.teardown(() => agent.stop());
  const logged = /"url":"(http:\/\/[^"]+\/metrics)"[^\n]*agent metrics listening|agent metrics listening[^\n]*"url":"(http:\/\/[^"]+\/metrics)"/.exec(agent.stdout());
  const url = logged?.[1] ?? logged?.[2];
  if (url === undefined) throw new Error(`no metrics address in the log:\n${agent.stdout()}`);
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/, 'bound to loopback by default');

  // GC pauses are observed as they happen: a busy start has had some; wait for the first if not.
  let text = await scrape(url);
  for (const deadline = Date.now() + 120_000; !/^nodejs_gc_duration_seconds_count\{kind="[a-z]+"\} [1-9]/m.test(text) && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 200));
    text = await scrape(url);
  }
  t.match(text, /^# TYPE nodejs_gc_duration_seconds histogram$/m, 'the GC histogram');
  t.match(text, /^nodejs_gc_duration_seconds_bucket\{le="[^"]+",kind="(minor|major|incremental|weakcb)"\} \d+$/m, 'GC pauses by kind');
  t.match(text, /^# TYPE nodejs_eventloop_lag_p99_seconds gauge$/m, 'event-loop delay quantiles');
  const lagP99 = sample(text, 'nodejs_eventloop_lag_p99_seconds');
  t.ok(lagP99 !== undefined && Number.isFinite(lagP99) && lagP99 > 0, `event-loop delay p99 is a measured value (${String(lagP99)})`);
  for (const name of ['svc_agent_jobs_total', 'svc_agent_checkout_seconds', 'svc_agent_job_setup_seconds', 'svc_agent_runner_wait_seconds', 'svc_agent_warm_runner_total']) {
    t.match(text, new RegExp(`^# HELP ${name} `, 'm'), `${name} is declared`);
  }
  const other = await fetch(url.replace('/metrics', '/secrets'));
  t.equal(other.status, 404, 'nothing else is served');
  const post = await fetch(url, { method: 'POST' });
  t.equal(post.status, 405);
  t.equal(await agent.stop(), 0, 'a clean stop closes the listener');
});

t.test('a port already taken stops the program with one line', async (t) => {
  const orch = await startOrchestratorDouble({ token: 'good' });
  t.teardown(() => orch.close());
  // The orchestrator double's own port is taken for sure.
  const taken = new URL(orch.url).port;
  const { runProgram } = await import('../fixtures/programs.ts');
  const r = await runProgram(bin, [], {
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SVC_ORCHESTRATOR_URL: orch.url, SVC_AGENT_TOKEN: 'good', SVC_AGENT_WORK_DIR: join(tmp.dir, 'taken'), SVC_AGENT_LOG_LEVEL: 'silent', SVC_AGENT_METRICS_PORT: taken },
  });
  t.equal(r.code, 1);
  t.match(r.stderr, new RegExp(`^svc-agent: SVC_ERR_AGENT_METRICS_LISTEN: SVC_AGENT_METRICS_PORT: cannot listen on 127\\.0\\.0\\.1:${taken}: `));
  t.equal(orch.connections, 0, 'it never connected');
});

t.test("a checkout job moves the agent's job metrics", async (t) => {
  const orch = await startOrchestratorDouble({ token: 'agent-token-metrics' });
  const workDir = join(tmp.dir, 'work');
  const agent = await launchAgent({ url: orch.url, token: 'agent-token-metrics', workDir, metricsPort: '0' });
  t.teardown(async () => {
    await agent.stop();
    await orch.close();
  });
  if (agent.metricsUrl === undefined) throw new Error('the agent has no metrics address');
  const before = await scrape(agent.metricsUrl);
  t.equal(sample(before, 'svc_agent_jobs_total{status="completed"}'), undefined, 'no job yet');

  const base = await makeTree(join(tmp.dir, 'base'));
  const remote = await createGitRemote(t);
  const files: Record<string, string> = {};
  for (const rel of ['.svc/svc.lock.json', '.svc/workflows/ci.ts']) files[rel] = await readFile(join(base.dir, rel), 'utf8');
  const sha = await remote.commit({ ...files, 'app.txt': 'one' }, 'c1');
  await remote.push('HEAD:refs/heads/main');
  for (let i = 0; i < 2; i++) {
    const d = dispatchOf({ sourceAuth: { cloneUrl: remote.url }, jobConfig: { sha, contentHash: base.contentHash, env: { SCRIPT: 'basic' } } });
    orch.dispatch(d);
    const done = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 60_000);
    t.equal(done.status, 'completed', done.reason ?? '');
  }
  const failing = dispatchOf({ sourceAuth: { cloneUrl: 'file:///nonexistent/repo.git' }, jobConfig: { sha: 'a'.repeat(40), env: { SCRIPT: 'basic' } } });
  orch.dispatch(failing);
  t.equal((await orch.waitFor('job.status', (m) => m.jobId === failing.jobId && m.status !== 'running', 60_000)).status, 'failed');

  // The job-finished count moves after the terminal status is sent: give it a moment.
  let text = await scrape(agent.metricsUrl);
  for (const deadline = Date.now() + 120_000; sample(text, 'svc_agent_jobs_total{status="failed"}') !== 1 && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 100));
    text = await scrape(agent.metricsUrl);
  }
  t.equal(sample(text, 'svc_agent_jobs_total{status="completed"}'), 2, 'two completed jobs');
  t.equal(sample(text, 'svc_agent_jobs_total{status="failed"}'), 1, 'one failed job');
  // Three checkouts went through the store: each phase observed once per job (the failed fetch's
  // job observed its lock wait only).
  t.equal(sample(text, 'svc_agent_checkout_seconds_count{phase="store_wait"}'), 3);
  t.equal(sample(text, 'svc_agent_checkout_seconds_count{phase="fetch"}'), 2);
  t.equal(sample(text, 'svc_agent_checkout_seconds_count{phase="materialise"}'), 2);
  t.equal(sample(text, 'svc_agent_job_setup_seconds_count'), 2, 'set-up observed for each job that reached its first step');
  t.equal(sample(text, 'svc_agent_runner_wait_seconds_count'), 2);
  const hits = sample(text, 'svc_agent_warm_runner_total{result="hit"}') ?? 0;
  const misses = sample(text, 'svc_agent_warm_runner_total{result="miss"}') ?? 0;
  t.equal(hits + misses, 3, `every process-sandbox job counted once (${hits} hits, ${misses} misses)`);
  t.ok(hits >= 1, 'the spare runner was used');
});
