// `svc runs list` in-process (runCli) against a real relay whose run index a real orchestrator fed
// over the real WebSocket link; then the ORCHESTRATOR is stopped and the list still answers from
// the relay's index (while `runs show`, which asks the orchestrator, cannot). Table and --json,
// filters, paging with the printed cursor, another org's token refused, bad parameters.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { cancelRunIn } from '../../../kernel/orchestrator/dispatch/index.ts';
import { sql } from '../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { ORG, OTHER_ORG, startPlatformStack } from '../../fixtures/platform-stack.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { insertRun, until } from '../../fixtures/runs.ts';

// Each CLI call is a fresh node process (a few seconds on a loaded machine).

await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db);
  const home = await mkdtemp(join(tmpdir(), 'svc-runs-list-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const alice = await stack.pat('alice');
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
  for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG', 'SVC_PLATFORM_TOKEN']) delete baseEnv[name];
  const svc = (args: string[], env: Record<string, string> = {}) => runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env: { ...baseEnv, ...env } });
  const login = await svc(['login', '--token', alice, '--platform-url', stack.relayUrl]);
  t.equal(login.code, 0, login.stderr);

  // Three runs: a push through the relay (queued: no agent), its re-run, and one cancelled on the orchestrator.
  const first = await stack.pushRun();
  const rerun = await fetch(`${stack.relayUrl}/orgs/${ORG}/runs/${first.runId}/rerun`, { method: 'POST', headers: stack.auth(alice) });
  t.equal(rerun.status, 200);
  const second = { runId: ((await rerun.json()) as { newRunId: string }).newRunId };
  const other = await insertRun(db.pool, { orgId: ORG, repository: 'acme/other', jobs: [{ name: 'lint', runsOn: ['nobody-has-this'] }] });
  await cancelRunIn(db.pool, other.runId, 'bob');
  const ids = [first.runId, second.runId, other.runId];
  await until('the three runs in the relay index', async () => {
    const rows = (await stack.relayDb.any(sql.unsafe`select run_id, status from relay_runs where org_id = ${ORG}`)) as readonly { run_id: string; status: string }[];
    const byId = new Map(rows.map((r) => [r.run_id, r.status]));
    return ids.every((id) => byId.has(id)) && byId.get(other.runId) === 'cancelled' ? true : undefined;
  }, 60_000, 100);

  await stack.orchestrator.stop();
  const auth = stack.auth(alice);
  await until('the relay to see the orchestrator gone', async () => {
    const res = await fetch(`${stack.relayUrl}/v1/orgs/${ORG}/runs/${first.runId}`, { headers: auth });
    return res.status === 503 ? true : undefined;
  }, 30_000, 100);

  await t.test('with the orchestrator stopped: table and --json from the relay index', async (t) => {
    const text = await svc(['runs', 'list']);
    t.equal(text.code, 0, text.stderr);
    const lines = text.stdout.trimEnd().split('\n');
    t.match(lines[0], /^RUN\s+STATUS\s+WORKFLOW\s+REPOSITORY\s+REF\s+EVENT\s+CREATED\s+TOOK\s+JOBS\s+NOTES$/);
    for (const id of ids) t.ok(lines.some((l) => l.startsWith(id)), `lists ${id}`);
    t.match(lines.find((l) => l.startsWith(other.runId)), /cancelled\s+ci\s+acme\/other\s+main\s+push .*1 \(1 cancelled\)\s+cancelled by bob$/);
    t.match(lines.find((l) => l.startsWith(first.runId)), /\s(queued|running)\s+ci\s+.*re-run at \d{4}-/);
    t.match(lines.find((l) => l.startsWith(second.runId)), new RegExp(`re-run of ${first.runId.slice(0, 8)} by alice`));
    t.notMatch(text.stdout, /more: /, 'no further page');

    const json = await svc(['runs', 'list', '--json']);
    t.equal(json.code, 0, json.stderr);
    const list = JSON.parse(json.stdout);
    t.equal(list.nextBefore, null);
    t.same(list.runs.map((r: { runId: string }) => r.runId).filter((id: string) => ids.includes(id)), [other.runId, second.runId, first.runId], 'newest first');
    t.match(list.runs[0], { runId: other.runId, status: 'cancelled', repository: 'acme/other', cancelledBy: 'bob', eventName: 'push', jobs: { cancelled: 1 } });
    t.match(list.runs[1], { runId: second.runId, parentRunId: first.runId, originalRunId: first.runId, triggeredBy: 'alice' });
    t.type(list.runs[2].lastRerunAt, 'string', 'the run re-run shows last_rerun_at');

    const shown = await svc(['runs', 'show', first.runId]);
    t.equal(shown.code, 1, 'runs show needs the orchestrator');
    t.match(shown.stderr, /SVC_ERR_RELAY_NO_ORCHESTRATOR/);
  });

  await t.test('filters and paging with the printed cursor', async (t) => {
    const filtered = JSON.parse((await svc(['runs', 'list', '--status', 'cancelled', '--repository', 'acme/other', '--json'])).stdout);
    t.same(filtered.runs.map((r: { runId: string }) => r.runId), [other.runId]);
    const byStatus = (await (await fetch(`${stack.relayUrl}/v1/orgs/${ORG}/runs?status=cancelled`, { headers: auth })).json()) as { runs: Array<{ runId: string }> };
    t.same(byStatus.runs.map((r) => r.runId), [other.runId], 'status alone');
    const none = await svc(['runs', 'list', '--repository', 'acme/nothing']);
    t.equal(none.code, 0);
    t.match(none.stdout, /no runs of acme/);

    const page1 = await svc(['runs', 'list', '--limit', '2']);
    t.equal(page1.code, 0, page1.stderr);
    const more = /more: svc runs list --before "([^"]+)"/.exec(page1.stdout);
    t.ok(more, 'prints how to get the next page');
    const page2 = JSON.parse((await svc(['runs', 'list', '--limit', '2', '--before', more![1]!, '--json'])).stdout);
    t.same(page2.runs.map((r: { runId: string }) => r.runId), [first.runId], 'the oldest run on the second page');
  });

  await t.test("another org's token is refused; bad parameters", async (t) => {
    const mallory = await stack.pat('mallory', OTHER_ORG);
    const refused = await svc(['runs', 'list', '--json'], { SVC_TOKEN: mallory });
    t.equal(refused.code, 1);
    t.match(JSON.parse(refused.stdout), { error: { code: 'SVC_ERR_RELAY_AUTH_WRONG_ORG' } });
    const route = await fetch(`${stack.relayUrl}/v1/orgs/${ORG}/runs`, { headers: stack.auth(mallory) });
    t.equal(route.status, 403, 'the route refuses a PAT of another org');
    const routeOtherToken = await fetch(`${stack.relayUrl}/v1/orgs/${ORG}/runs`, { headers: stack.auth(stack.otherOrgToken) });
    t.equal(routeOtherToken.status, 403, "and another org's platform token");

    const badBefore = await svc(['runs', 'list', '--before', 'last tuesday']);
    t.equal(badBefore.code, 1);
    t.match(badBefore.stderr, /SVC_ERR_RELAY_RUN_LIST_CURSOR_INVALID: "before" must be/);
    t.equal((await svc(['runs', 'list', '--status', 'bogus'])).code, 2, 'an unknown status is a usage error');
    for (const query of ['limit=0', 'limit=x', 'status=bogus', 'unknown=1', 'before=nope']) {
      const res = await fetch(`${stack.relayUrl}/v1/orgs/${ORG}/runs?${query}`, { headers: auth });
      t.equal(res.status, 400, query);
      const body = (await res.json()) as { error: { code: string; message: string } };
      t.match(body.error, { code: /^SVC_ERR_(HTTP_INVALID_QUERY|RELAY_RUN_LIST_CURSOR_INVALID)$/, message: /\w/ }, query);
    }
  });
});
