// svc-admin cluster nodes in-process (runCli) against a real database: every node that joined,
// live first, with its leader flag only while it is alive, dead once its beats stop (or it
// stopped), and the alive window taken from cluster.heartbeatMs (three beats).
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/app.ts';
import { migrate, sql, type DatabasePool } from '../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: process.env['HOME'], ...extra });

async function insertNode(pool: DatabasePool, n: { id: string; address: string; leader: boolean; seenSecondsAgo: number; stopped?: boolean }): Promise<void> {
  await pool.query(sql.unsafe`
    INSERT INTO cluster_nodes (node_id, address, incarnation, pid, version, leader, started_at, last_seen_at, stopped_at)
    VALUES (${n.id}, ${n.address}, ${randomUUID()}, 4242, '0.9.0', ${n.leader}, now() - interval '1 hour',
      now() - ${n.seenSecondsAgo} * interval '1 second', ${n.stopped === true ? sql.fragment`now() - ${n.seenSecondsAgo} * interval '1 second'` : null})`);
}

interface Node {
  nodeId: string;
  address: string;
  version: string;
  pid: number;
  leader: boolean;
  alive: boolean;
  startedAt: string;
  lastSeenAt: string;
  lastSeenAgoMs: number;
  stoppedAt: string | null;
}

t.test('cluster nodes', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const run = (extra: Record<string, string> = {}, ...args: string[]) =>
      runCli(BIN, ['cluster', 'nodes', ...args], { env: env({ SVC_DATABASE_URL: db.url, ...extra }) });

    const empty = await run();
    t.equal(empty.code, 0, empty.stderr);
    t.equal(empty.stdout, 'no cluster nodes (no orchestrator has started on this database)\n');

    // A live leader, a node whose beats stopped 5 minutes ago (still flagged leader in its row),
    // and one that stopped cleanly a minute ago.
    await insertNode(db.pool, { id: 'node-b', address: 'http://10.0.0.2:7700', leader: true, seenSecondsAgo: 300 });
    await insertNode(db.pool, { id: 'node-a', address: 'http://10.0.0.1:7700', leader: true, seenSecondsAgo: 0 });
    await insertNode(db.pool, { id: 'node-c', address: 'http://10.0.0.3:7700', leader: false, seenSecondsAgo: 60, stopped: true });

    // Beats of 60 s (a 3-minute alive window): node-a stays alive however long the machine takes
    // to start the command; node-b, silent for 5 minutes, is still dead.
    const minute = { SVC_CLUSTER_HEARTBEAT_MS: '60000' };
    const listed = await run(minute);
    t.equal(listed.code, 0, listed.stderr);
    const lines = listed.stdout.trim().split('\n');
    t.equal(lines.length, 3);
    t.match(lines[0], /^node-a  http:\/\/10\.0\.0\.1:7700  0\.9\.0  leader=yes  alive  last seen \d+s ago$/);
    t.match(lines[1], /^node-b  http:\/\/10\.0\.0\.2:7700  0\.9\.0  leader=no  dead  last seen 5m ago$/, 'a stale leader is dead and not the leader');
    t.match(lines[2], /^node-c  http:\/\/10\.0\.0\.3:7700  0\.9\.0  leader=no  dead \(stopped\)  last seen \d+s ago$/);

    const json = await run(minute, '--json');
    t.equal(json.code, 0, json.stderr);
    const body = JSON.parse(json.stdout) as { nodes: Node[] };
    t.same(Object.keys(body), ['nodes']);
    t.same(body.nodes.map((n) => [n.nodeId, n.leader, n.alive]), [['node-a', true, true], ['node-b', false, false], ['node-c', false, false]]);
    t.match(body.nodes[0], { address: 'http://10.0.0.1:7700', version: '0.9.0', pid: 4242, stoppedAt: null, startedAt: /^\d{4}-\d\d-\d\dT/, lastSeenAt: /Z$/ });
    t.ok(body.nodes[0]!.lastSeenAgoMs < 180_000);
    t.ok(body.nodes[1]!.lastSeenAgoMs >= 300_000);
    t.match(body.nodes[2], { stoppedAt: /Z$/ });

    // Three beats of 200 s: a node silent for 5 minutes is still alive (and leads again).
    const slow = await run({ SVC_CLUSTER_HEARTBEAT_MS: '200000' }, '--json');
    t.equal(slow.code, 0, slow.stderr);
    t.same((JSON.parse(slow.stdout) as { nodes: Node[] }).nodes.map((n) => [n.nodeId, n.leader, n.alive]), [['node-a', true, true], ['node-b', true, true], ['node-c', false, false]]);
  });
});
