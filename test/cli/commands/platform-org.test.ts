// The developer CLI's org commands in-process (runCli) through a real relay to a real orchestrator
// (startPlatformStack: real WebSocket link, real PostgreSQL for both): `svc orchestrators`,
// `svc endpoints`, `svc secrets list|set`, `svc notifications`, `svc report`,
// `svc runs list --workflow/--branch` and `svc diagnostics` / `svc feedback --draft` against a
// reachable Platform. Secret values and tokens must never appear in any output.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createContext, openContextSecrets, setSecret } from '../../../kernel/orchestrator/secrets/index.ts';
import { sql } from '../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { ORG, OTHER_ORG, startPlatformStack } from '../../fixtures/platform-stack.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { insertRun } from '../../fixtures/runs.ts';


await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db);
  const home = await mkdtemp(join(tmpdir(), 'svc-org-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const alice = await stack.pat('alice');
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
  for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG', 'SVC_PLATFORM_TOKEN', 'SVC_SECRET_KEY']) delete baseEnv[name];
  const bin = join(REPO_ROOT, 'bin/svc.ts');
  const svc = (args: string[], env: Record<string, string> = {}, cwd?: string) =>
    runCli(bin, args, { env: { ...baseEnv, ...env }, ...(cwd !== undefined ? { cwd } : {}) });
  const json = async (args: string[], env: Record<string, string> = {}) => {
    const res = await svc([...args, '--json'], env);
    t.equal(res.code, 0, `${args.join(' ')}: ${res.stderr}`);
    return JSON.parse(res.stdout);
  };

  const login = await svc(['login', '--token', alice, '--platform-url', stack.relayUrl]);
  t.equal(login.code, 0, login.stderr);
  const mallory = await stack.pat('mallory', OTHER_ORG);

  await t.test('orchestrators: the connected orchestrator with version, connected since and last seen', async (t) => {
    const out = await json(['orchestrators']);
    t.equal(out.orchestrators.length, 1);
    const [o] = out.orchestrators;
    const pkg = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8'));
    t.equal(o.version, pkg.version, 'the version the orchestrator announced in its hello');
    t.ok(Date.parse(o.connectedAt) <= Date.parse(o.lastSeenAt));
    t.ok(Date.now() - Date.parse(o.lastSeenAt) < 10 * 60_000);
    const text = await svc(['orchestrators']);
    t.match(text.stdout, new RegExp(`ORCHESTRATOR\\s+CONNECTED\\s+VERSION\\s+LAST SEEN\\n${o.orchestratorId}\\s`));
    // Another org sees none of ours (its own, with no orchestrator connected: an empty list).
    const other = await svc(['orchestrators', '--json'], { SVC_TOKEN: mallory, SVC_ORG: OTHER_ORG });
    t.equal(other.code, 0, other.stderr);
    t.same(JSON.parse(other.stdout), { orchestrators: [] });
    const wrongOrg = await svc(['orchestrators', '--json'], { SVC_TOKEN: mallory });
    t.equal(wrongOrg.code, 1);
    t.match(JSON.parse(wrongOrg.stdout), { error: { code: 'SVC_ERR_RELAY_AUTH_WRONG_ORG' } });
  });

  await t.test('endpoints: the URL per registered source', async (t) => {
    const out = await json(['endpoints']);
    t.match(out.endpoints, [{ providerKind: 'forge', routingKey: 'forge:7', path: `/webhook/${ORG}/forge`, url: `${stack.relayUrl}/webhook/${ORG}/forge` }]);
    const text = await svc(['endpoints']);
    t.match(text.stdout, new RegExp(`forge\\s+${stack.relayUrl.replace(/[.]/g, '\\.')}/webhook/${ORG}/forge\\s+forge:7`));
    const noToken = await svc(['endpoints'], { SVC_TOKEN: 'svcpat_not-a-token' });
    t.equal(noToken.code, 1);
    t.match(noToken.stderr, /SVC_ERR_RELAY_AUTH_INVALID/);
  });

  // Before any run exists in the orchestrator: its runs would reach the relay's index too.
  await t.test('report and runs list filters from the run index', async (t) => {
    const add = async (workflow: string, status: string, seconds: number | null, ref = 'refs/heads/main') => {
      const created = new Date(Date.now() - 3_600_000);
      const finished = seconds === null ? null : new Date(created.getTime() + seconds * 1000).toISOString();
      await stack.relayDb.query(sql.unsafe`insert into relay_runs (org_id, run_id, workflow, repository, status, updated_at, created_at, started_at, finished_at, ref)
        values (${ORG}, ${randomUUID()}, ${workflow}, 'acme/app', ${status}, now(), ${created.toISOString()}, ${created.toISOString()}, ${finished}, ${ref})`);
    };
    await stack.relayDb.query(sql.unsafe`delete from relay_runs where org_id = ${ORG}`);
    await add('build', 'completed', 10);
    await add('build', 'completed', 20);
    await add('build', 'failed', 30, 'refs/heads/feature');
    await add('release', 'running', null, 'refs/tags/v1');
    await stack.relayDb.query(sql.unsafe`insert into relay_runs (org_id, run_id, workflow, repository, status, updated_at, created_at) values (${ORG}, ${randomUUID()}, 'build', 'acme/app', 'failed', now(), now() - interval '30 days')`);

    const report = await json(['report']);
    t.equal(report.total, 4, 'the 30-day-old run is outside the default 7 days');
    t.same(report.statuses, { completed: 2, failed: 1, running: 1 });
    t.equal(report.failureRate, 1 / 3);
    const build = report.workflows.find((w: { workflow: string }) => w.workflow === 'build');
    t.match(build, { total: 3, statuses: { completed: 2, failed: 1 }, medianDurationMs: 20_000 });
    t.equal(build.failureRate, 1 / 3);
    t.match(report.workflows.find((w: { workflow: string }) => w.workflow === 'release'), { total: 1, failureRate: null, medianDurationMs: null });
    t.equal((await json(['report', '--days', '90'])).total, 5);
    const text = await svc(['report']);
    t.match(text.stdout, /Runs of acme since .*: 4 \(2 completed, 1 failed, 1 running\); failure rate 33\.3%/);
    t.match(text.stdout, /build\s+3\s+2 completed, 1 failed\s+33\.3%\s+20\.0s/);
    t.equal((await svc(['report', '--days', '0'])).code, 2);

    const byWorkflow = await json(['runs', 'list', '--workflow', 'build']);
    t.equal(byWorkflow.runs.length, 4);
    const byBranch = await json(['runs', 'list', '--workflow', 'build', '--branch', 'main']);
    t.equal(byBranch.runs.length, 2);
    t.ok(byBranch.runs.every((r: { ref: string; workflow: string }) => r.ref === 'refs/heads/main' && r.workflow === 'build'));
    const byTag = await json(['runs', 'list', '--branch', 'refs/tags/v1', '--status', 'running', '--limit', '5']);
    t.match(byTag.runs, [{ workflow: 'release', status: 'running' }]);
    t.equal(byTag.runs.length, 1);
  });

  await t.test('secrets: list names and contexts, set only test contexts, values never shown', async (t) => {
    await createContext(db.pool, { name: 'test', allowLocalExecution: true, orgs: [ORG] });
    await createContext(db.pool, { name: 'prod', repositories: ['acme/*'] });
    await createContext(db.pool, { name: 'umbrella-only', allowLocalExecution: true, orgs: [OTHER_ORG] });
    const prodValue = `prod-${randomBytes(8).toString('hex')}`;
    await setSecret(db.pool, stack.masterKey, 'prod', 'DEPLOY_KEY', prodValue);

    const value = `v-${randomBytes(12).toString('hex')}`;
    const set = await runCli(bin, ['secrets', 'set', 'test', 'API_KEY'], { env: { ...baseEnv }, stdin: `${value}\n` });
    t.equal(set.code, 0, set.stderr);
    t.equal(set.stdout.trim(), 'Set secret test:API_KEY.');
    t.notMatch(set.stdout + set.stderr, value);
    const opened = await openContextSecrets(db.pool, [{ name: 'current', key: stack.masterKey }], ['test']);
    t.same(opened, { test: { API_KEY: value } }, 'sealed with the orchestrator master key; one trailing newline dropped');

    const again = await svc(['secrets', 'set', 'test', 'API_KEY', '--value', 'second-value', '--json']);
    t.equal(again.code, 0, again.stderr);
    t.same(JSON.parse(again.stdout), { context: 'test', key: 'API_KEY', replaced: true });

    const refused = await svc(['secrets', 'set', 'prod', 'DEPLOY_KEY', '--value', 'overwrite-attempt']);
    t.equal(refused.code, 1);
    t.match(refused.stderr, /SVC_ERR_SECRETS_CONTEXT_NOT_TEST: context "prod" is not a test context \(allowLocalExecution is false\)/);
    const refusedNew = await svc(['secrets', 'set', 'prod', 'NEW_KEY', '--value', 'overwrite-attempt']);
    t.equal(refusedNew.code, 1);
    t.same(await openContextSecrets(db.pool, [{ name: 'current', key: stack.masterKey }], ['prod']), { prod: { DEPLOY_KEY: prodValue } }, 'nothing changed');
    const foreign = await svc(['secrets', 'set', 'umbrella-only', 'K', '--value', 'x1234567']);
    t.equal(foreign.code, 1, 'a context bound only to another org is not ours');
    t.match(foreign.stderr, /not a context of org acme/);
    const missing = await svc(['secrets', 'set', 'nope', 'K', '--value', 'x1234567']);
    t.equal(missing.code, 1);
    t.match(missing.stderr, /SVC_ERR_SECRETS_CONTEXT_NOT_FOUND/);
    const badKey = await svc(['secrets', 'set', 'test', '1bad', '--value', 'x1234567']);
    t.equal(badKey.code, 1);
    t.match(badKey.stderr, /SVC_ERR_SECRETS_KEY/);
    const empty = await runCli(bin, ['secrets', 'set', 'test', 'EMPTY'], { env: { ...baseEnv }, stdin: '' });
    t.equal(empty.code, 1);
    t.match(empty.stderr, /must not be empty/);
    t.equal((await svc(['secrets', 'set', 'test'])).code, 2, 'missing name: usage error');
    // The route itself: a malformed body is refused without echoing the value; another org's token is 403.
    const url = `${stack.relayUrl}/v1/orgs/${ORG}/secrets/test/API_KEY`;
    const bad = await fetch(url, { method: 'POST', headers: { ...stack.auth(alice), 'content-type': 'application/json' }, body: JSON.stringify({ value: 'echo-me-not', extra: 1 }) });
    t.equal(bad.status, 400);
    const badText = await bad.text();
    t.match(badText, /SVC_ERR_HTTP_INVALID_BODY/);
    t.notMatch(badText, 'echo-me-not');
    const foreignToken = await fetch(url, { method: 'POST', headers: { ...stack.auth(mallory), 'content-type': 'application/json' }, body: JSON.stringify({ value: 'x1234567' }) });
    t.equal(foreignToken.status, 403);

    const list = await json(['secrets', 'list']);
    const names = list.contexts.map((c: { name: string }) => c.name).sort();
    t.same(names, ['prod', 'test'], "another org's context is not listed");
    t.match(list.contexts.find((c: { name: string }) => c.name === 'test'), { allowLocalExecution: true, orgs: [ORG], keys: [{ key: 'API_KEY' }] });
    t.match(list.contexts.find((c: { name: string }) => c.name === 'prod'), { allowLocalExecution: false, repositories: ['acme/*'], keys: [{ key: 'DEPLOY_KEY' }] });
    const text = await svc(['secrets', 'list']);
    t.match(text.stdout, /prod\s+no\s+acme\/\*\s+DEPLOY_KEY/);
    t.match(text.stdout, /test\s+yes\s+org:acme\s+API_KEY/);
    for (const out of [JSON.stringify(list), text.stdout, text.stderr]) {
      t.notMatch(out, prodValue);
      t.notMatch(out, value);
      t.notMatch(out, 'second-value');
    }
  });

  await t.test('notifications: pending approvals and run-status deliveries with their outcome', async (t) => {
    const held = await insertRun(db.pool, { orgId: ORG, status: 'held', workflow: 'deploy', jobs: [{ name: 'ship' }] });
    await db.pool.query(sql.unsafe`insert into approval_holds (id, org_id, run_id, job_id, level, clauses, reason)
      values (${randomUUID()}, ${ORG}, ${held.runId}, ${held.jobs['ship']!.id}, 'job', ${sql.jsonb([])}, 'production deploy')`);
    const sourceId = randomUUID();
    await db.pool.query(sql.unsafe`insert into forge_status_deliveries (id, org_id, run_id, feed_seq, changed_at, target, source_id, provider_kind, run_status, state, conclusion, status, attempts, last_error, last_status_code)
      values (${randomUUID()}, ${ORG}, ${held.runId}, 1, now(), 'webhook', ${sourceId}, 'forge', 'failed', 'completed', 'failure', 'failed', 8, 'HTTP 500 from the hook', 500)`);
    const other = await insertRun(db.pool, { orgId: OTHER_ORG, status: 'held', jobs: [{ name: 'x' }] });
    await db.pool.query(sql.unsafe`insert into approval_holds (id, org_id, run_id, level, clauses) values (${randomUUID()}, ${OTHER_ORG}, ${other.runId}, 'workflow', ${sql.jsonb([])})`);

    const out = await json(['notifications']);
    t.match(out.approvals, [{ runId: held.runId, workflow: 'deploy', level: 'job', job: 'ship', reason: 'production deploy' }]);
    t.equal(out.approvals.length, 1, "another org's holds are not shown");
    t.match(out.deliveries, [{ runId: held.runId, target: 'webhook', status: 'failed', attempts: 8, lastError: 'HTTP 500 from the hook', conclusion: 'failure' }]);
    const text = await svc(['notifications']);
    t.equal(text.code, 0, text.stderr);
    t.match(text.stdout, /Awaiting approval \(svc approve\|reject <run>\):\n.*\n\s+\S+\s+deploy\s+acme\/widgets\s+job ship\s+production deploy/);
    t.match(text.stdout, /Run-status notifications:\n[\s\S]*webhook\/forge\s+failed \(failure\)\s+failed\s+8 attempt\(s\): HTTP 500 from the hook/);
    t.equal((await svc(['notifications', '--limit', '0'])).code, 2, 'a limit below 1 is a usage error');
  });

  await t.test('diagnostics and feedback --draft: Platform reachable, identity shown, no token anywhere', async (t) => {
    const secretEnv = { SVC_PLATFORM_TOKEN: stack.orgToken, SVC_SECRET_KEY: stack.masterKey.toString('base64') };
    const text = await svc(['diagnostics'], secretEnv);
    t.equal(text.code, 0, text.stderr);
    t.match(text.stdout, new RegExp(`platform    ${stack.relayUrl.replace(/[.]/g, '\\.')}: reachable; org acme as alice`));
    t.match(text.stdout, /token       set \[redacted\]/);
    t.match(text.stdout, /SVC_PLATFORM_TOKEN=\[redacted\]/);
    const asJson = await svc(['diagnostics', '--json'], secretEnv);
    t.equal(asJson.code, 0, asJson.stderr);
    t.match(JSON.parse(asJson.stdout), { config: { token: 'set', org: ORG }, platform: { reachable: true, whoami: { orgId: ORG, user: 'alice' } } });
    const outFile = join(home, 'report.md');
    const draft = await svc(['feedback', '--draft', '--out', outFile], secretEnv);
    t.equal(draft.code, 0, draft.stderr);
    const written = await readFile(outFile, 'utf8');
    t.match(written, /## What happened[\s\S]*## What I expected[\s\S]*## Diagnostics\n\n```text\nsvc {9}\d/);
    t.match(written, /reachable; org acme as alice/);
    for (const out of [text.stdout, text.stderr, asJson.stdout, written, draft.stdout]) {
      t.notMatch(out, alice);
      t.notMatch(out, stack.orgToken);
      t.notMatch(out, stack.masterKey.toString('base64'));
    }
    // The token leaks nowhere even when it is wrong (the error path).
    const bad = await svc(['diagnostics', '--json'], { SVC_TOKEN: 'svcpat_wrongwrongwrong' });
    t.equal(bad.code, 0);
    t.match(JSON.parse(bad.stdout), { platform: { reachable: true, whoami: null, error: /not valid/ } });
    t.notMatch(bad.stdout, 'svcpat_wrongwrongwrong');
  });
});
