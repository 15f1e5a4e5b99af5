// The cluster against a real PostgreSQL: leader election by a session advisory lock (one leader;
// a stopped or cut-off leader is replaced; separate databases are separate clusters), and
// membership (join token, heartbeat of one incarnation, node listing).
import t from 'tap';
import { LeaderElection } from '../../../../kernel/orchestrator/cluster/leader.ts';
import { heartbeat, joinCluster, leaveCluster, listClusterNodes } from '../../../../kernel/orchestrator/cluster/membership.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger, type Test } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';

const WAIT_MS = 60_000;

interface Node {
  name: string;
  election: LeaderElection;
  /** Every leadership change, in order. */
  changes: boolean[];
}

async function node(t: Test, url: string, name: string): Promise<Node> {
  const changes: boolean[] = [];
  const election = new LeaderElection({ url, logger: testLogger, intervalMs: 100, onChange: (leader) => changes.push(leader) });
  t.teardown(() => election.stop());
  await election.start();
  return { name, election, changes };
}

const leaders = (nodes: Node[]) => nodes.filter((n) => n.election.isLeader);

/** Two more election attempts of every node (the second began after this call; one each 100 ms). */
async function twoAttempts(nodes: Node[]): Promise<void> {
  const start = nodes.map((n) => n.election.attempts);
  await until('two election attempts of each node', () => (nodes.every((n, i) => n.election.attempts >= start[i]! + 2) ? true : undefined), WAIT_MS, 10);
}

async function oneLeader(nodes: Node[], what: string): Promise<Node> {
  return until(what, () => {
    const now = leaders(nodes);
    return now.length === 1 ? now[0] : undefined;
  }, WAIT_MS);
}

/** Backends of this database holding an advisory lock (the leader's election session). */
async function lockHolders(pool: DatabasePool): Promise<number[]> {
  return (await pool.anyFirst(sql.unsafe`
    SELECT l.pid FROM pg_locks l
    WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    ORDER BY l.pid`)) as number[];
}

t.test('leader election', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const a = await node(t, db.url, 'a');
    const b = await node(t, db.url, 'b');
    const first = await oneLeader([a, b], 'one leader');
    const other = first === a ? b : a;
    await twoAttempts([a, b]);
    t.same(leaders([a, b]), [first], 'exactly one node leads, and keeps leading');
    t.same(first.changes, [true]);
    t.same(other.changes, [], 'the other never led');
    const holders = await lockHolders(db.pool);
    t.equal(holders.length, 1, 'one advisory lock held in this database');
    const sessions = (await db.pool.anyFirst(sql.unsafe`
      SELECT pid FROM pg_stat_activity WHERE application_name = 'svc-leader-election' AND datname = current_database() ORDER BY pid`)) as number[];
    t.equal(sessions.length, 2, 'each node has its election session');
    t.ok(sessions.includes(holders[0]!), 'the lock is held by an election session');

    await t.test('a stopped leader is replaced', async (t) => {
      await first.election.stop();
      t.equal(first.election.isLeader, false);
      t.same(first.changes, [true, false]);
      const next = await oneLeader([other], 'the other node leads');
      t.equal(next, other);
    });

    await t.test("a leader whose session is terminated loses leadership; one node takes it again", async (t) => {
      const c = await node(t, db.url, 'c');
      await twoAttempts([other, c]);
      t.same(leaders([other, c]), [other], 'the newcomer follows');
      const [pid] = await lockHolders(db.pool);
      t.ok(pid, 'the leader session holds the lock');
      const killed = await db.pool.anyFirst(sql.unsafe`
        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = 'svc-leader-election' AND datname = current_database() AND pid = ${pid!} AND pid <> pg_backend_pid()`);
      t.same(killed, [true], "the leader's session is terminated");
      await until('the leader notices it lost its session', () => (other.changes.includes(false) ? true : undefined), WAIT_MS);
      t.same(other.changes.slice(0, 2), [true, false], 'leadership dropped');
      const again = await oneLeader([other, c], 'a leader again');
      t.ok(again === other || again === c, `${again.name} leads`);
      await until('a new lock holder', async () => {
        const now = await lockHolders(db.pool);
        return now.length === 1 && now[0] !== pid ? true : undefined;
      }, WAIT_MS);
      await twoAttempts([other, c]);
      t.equal(leaders([other, c]).length, 1, 'still exactly one leader');
    });

    await t.test('another database on the same server is another cluster with its own leader', async (t) => {
      const url = await db.extraDatabase();
      const x = await node(t, url, 'x');
      await oneLeader([x], 'the other database has a leader');
      t.equal(leaders([other]).length + leaders([x]).length, 2, 'both clusters lead at once');
      const y = await node(t, url, 'y');
      await twoAttempts([x, y]);
      t.same(leaders([x, y]), [x], 'one leader per database');
      await x.election.stop();
      await oneLeader([y], 'y takes over its own cluster');
    });
  });
});

t.test('cluster membership', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const join = (nodeId: string, joinToken: string | undefined) => joinCluster(db.pool, { nodeId, address: `http://${nodeId}:8080`, joinToken, version: '0.9.0', logger: testLogger });

    const n1 = await join('n1', 'token-T');
    t.match(await db.pool.one(sql.unsafe`SELECT created_by, join_token_hash FROM cluster_membership`), { created_by: 'n1', join_token_hash: /^[0-9a-f]{64}$/ }, 'the first node records the token (hashed)');
    t.equal(Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM cluster_membership WHERE join_token_hash LIKE '%token-T%'`)), 0, 'never in clear');
    await t.rejects(join('n2', 'token-U'), { code: 'SVC_ERR_CLUSTER_JOIN_REFUSED' }, 'another token is refused');
    await t.rejects(join('n3', undefined), { code: 'SVC_ERR_CLUSTER_JOIN_TOKEN_MISSING' }, 'no token is refused');
    await t.rejects(join('', 'token-T'), { code: 'SVC_ERR_CLUSTER_NODE_ID_INVALID' });
    t.same(await db.pool.anyFirst(sql.unsafe`SELECT node_id FROM cluster_nodes ORDER BY node_id`), ['n1'], 'refused nodes are not recorded');
    const n2 = await join('n2', 'token-T');

    t.equal(await heartbeat(db.pool, 'n1', n1, true), true, 'n1 beats as leader');
    t.equal(await heartbeat(db.pool, 'n2', n2, false), true);
    let nodes = await listClusterNodes(db.pool);
    t.match(nodes, [
      { nodeId: 'n1', address: 'http://n1:8080', version: '0.9.0', pid: process.pid, alive: true, leader: true, stoppedAt: null },
      { nodeId: 'n2', alive: true, leader: false, stoppedAt: null },
    ]);

    // Another process joins with n1's id: the old incarnation's beats are refused from then on.
    const n1b = await join('n1', 'token-T');
    t.not(n1b, n1);
    t.equal(await heartbeat(db.pool, 'n1', n1, true), false, 'the old incarnation learns it was taken over');
    t.equal(await heartbeat(db.pool, 'n1', n1b, false), true);

    await leaveCluster(db.pool, 'n2', n2);
    await db.pool.query(sql.unsafe`UPDATE cluster_nodes SET last_seen_at = now() - interval '1 hour' WHERE node_id = 'n1'`);
    await db.pool.query(sql.unsafe`UPDATE cluster_nodes SET leader = true WHERE node_id = 'n1'`);
    nodes = await listClusterNodes(db.pool);
    t.match(nodes.find((n) => n.nodeId === 'n1'), { alive: false, leader: false }, 'a node that stopped beating is neither alive nor leader');
    t.match(nodes.find((n) => n.nodeId === 'n2'), { alive: false, leader: false, stoppedAt: /^\d{4}-\d\d-\d\dT/ }, 'a node that left is shown stopped');
    t.equal(await heartbeat(db.pool, 'n1', n1b, true), true);
    t.match((await listClusterNodes(db.pool))[0], { nodeId: 'n1', alive: true, leader: true }, 'alive nodes first');

    await t.test('a database without a token: a node without one joins, a later token is recorded', async (t) => {
      const url = await db.extraDatabase();
      const { createDatabase } = await import('../../../../kernel/services/db/pool.ts');
      const pool = await createDatabase({ url, logger: testLogger, maxPoolSize: 2 });
      t.teardown(() => pool.end());
      await migrate(pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
      const plain = (nodeId: string, joinToken: string | undefined) => joinCluster(pool, { nodeId, address: 'http://x', joinToken, version: '0.9.0', logger: testLogger });
      await plain('p1', undefined);
      await plain('p2', undefined);
      t.equal(Number(await pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM cluster_membership`)), 0);
      await plain('p3', 'token-V');
      await t.rejects(plain('p4', undefined), { code: 'SVC_ERR_CLUSTER_JOIN_TOKEN_MISSING' }, 'once a token is recorded it is required');
    });
  });
});
