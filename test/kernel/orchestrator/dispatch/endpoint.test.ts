// The agent WebSocket: token auth, id/token binding, protocol floor, frame validation, labels.
import t from 'tap';
import { createAgentToken, revokeAgentToken } from '../../../../kernel/orchestrator/dispatch/tokens.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { PROTOCOL_VERSION, WS_CLOSE_PROTOCOL_ERROR, WS_CLOSE_REFUSED, WS_CLOSE_UNAUTHORIZED } from '../../../../schemas/wire/relay.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { startNode } from './harness.ts';

t.test('token mode', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, { SVC_AGENT_AUTH: 'token' });
    const good = await createAgentToken(db.pool, { description: 'ci' });
    const other = await createAgentToken(db.pool);

    const agent = await TestAgent.online({ url: node.url, agentId: 'a1', token: good.token, labels: ['gpu'] });
    const registered = await agent.waitFor('agent.registered');
    t.same(registered.labels, ['svc:os:linux', 'svc:arch:x64', 'svc:role:static', 'svc:sandbox:bare-metal', 'gpu'], 'effective labels returned');
    t.equal(registered.protocolVersion, PROTOCOL_VERSION, "the orchestrator's protocol");
    const row = (await db.pool.one(sql.unsafe`SELECT token_hash, connected, labels FROM agents WHERE id = 'a1'`)) as { token_hash: string; connected: boolean; labels: string[] };
    t.ok(row.connected);
    t.match(row.token_hash, /^[0-9a-f]{64}$/, 'token hash stored on first registration');
    t.same(row.labels, registered.labels);

    for (const [name, token] of [['missing', undefined], ['unknown', 'svcat_nope'], ['malformed', 'not a token']] as const) {
      const bad = await TestAgent.connect({ url: node.url, agentId: 'bad', ...(token === undefined ? {} : { token }) });
      const closed = await bad.closed;
      t.equal(closed.code, WS_CLOSE_UNAUTHORIZED, `${name} token closes with 4001`);
      t.ok(closed.reason.length > 0, `${name}: a reason is given (${closed.reason})`);
    }
    t.equal((await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM agents WHERE id = 'bad'`)) as number, 0, 'refused agents leave no row');

    const expired = await createAgentToken(db.pool, { ttlMs: 1 });
    await new Promise((r) => setTimeout(r, 5));
    t.match(await (await TestAgent.connect({ url: node.url, agentId: 'e', token: expired.token })).closed, { code: WS_CLOSE_UNAUTHORIZED, reason: /expired/ });

    const revoked = await createAgentToken(db.pool);
    await revokeAgentToken(db.pool, revoked.id);
    t.match(await (await TestAgent.connect({ url: node.url, agentId: 'r', token: revoked.token })).closed, { code: WS_CLOSE_UNAUTHORIZED, reason: /revoked/ });

    // Same id, different token: the later one is refused and the first keeps its session.
    const impostor = await TestAgent.connect({ url: node.url, agentId: 'a1', token: other.token });
    t.match(await impostor.closed, { code: WS_CLOSE_REFUSED, reason: /different token/ });
    t.ok(agent.isOpen, 'the first agent is still connected');
    t.ok(node.service.registry.get('a1'), 'and still registered');

    // Same id, same token (a reconnect): accepted, replaces the old socket.
    const again = await TestAgent.online({ url: node.url, agentId: 'a1', token: good.token });
    t.match(await agent.closed, { code: WS_CLOSE_REFUSED, reason: /replaced/ });
    t.ok(again.isOpen);
    await again.close();
  });
});

t.test('none mode accepts any agent; protocol floor; frame validation', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, { SVC_AGENT_AUTH: 'none' });
    const agent = await TestAgent.online({ url: node.url, agentId: 'n1' });
    t.ok(agent.isOpen, 'no token needed');

    const old = await TestAgent.connect({ url: node.url, agentId: 'old', protocolVersion: 2 });
    t.match(await old.closed, { code: WS_CLOSE_PROTOCOL_ERROR, reason: /protocol version 2 is below the minimum 3/ });

    // Invalid frames: protocol.error naming the problem, connection kept, nothing changed.
    agent.sendRaw('{not json');
    t.match(await agent.waitFor('protocol.error', (m) => m.error.code === 'SVC_ERR_PROTOCOL_JSON'), { error: { message: /JSON/ } });
    agent.sendRaw({ type: 'job.status', jobId: 'x', status: 'exploded', steps: [] });
    t.match(await agent.waitFor('protocol.error', (m) => /status/.test(m.error.message)), { error: { code: 'SVC_ERR_PROTOCOL_INVALID', message: /^status: / } });
    agent.sendRaw({ type: 'log.chunk', jobId: 'x', seq: 0, lines: [], extra: 1 });
    t.match(await agent.waitFor('protocol.error', (m) => /extra/.test(m.error.message)), { error: { message: 'extra: unknown field' } });
    agent.sendRaw({ type: 'no.such.thing' });
    t.match(await agent.waitFor('protocol.error', (m) => /unknown message type/.test(m.error.message)), { error: { message: /type: unknown message type "no.such.thing"/ } });
    agent.sendRaw([1, 2]);
    await agent.waitFor('protocol.error', (m) => m.error.message === 'must be an object');
    agent.register();
    await agent.waitFor('protocol.error', (m) => m.error.code === 'SVC_ERR_PROTOCOL_ALREADY_REGISTERED');
    // Reports for a job this agent does not own are refused.
    const { jobs } = await insertRun(db.pool, { jobs: [{ name: 'build', runsOn: ['nobody-has-this'] }] });
    agent.jobStatus(jobs['build']!.id, 'completed');
    await agent.waitFor('protocol.error', (m) => m.error.code === 'SVC_ERR_DISPATCH_NOT_OWNER');
    agent.sendRaw({ type: 'log.chunk', jobId: jobs['build']!.id, seq: 0, lines: [] });
    await agent.waitFor('protocol.error', (m) => m.error.code === 'SVC_ERR_DISPATCH_NOT_OWNER' && agent.all('protocol.error').length >= 8);
    t.equal((await db.pool.oneFirst(sql.unsafe`SELECT status FROM jobs WHERE id = ${jobs['build']!.id}`)) as string, 'queued', 'job untouched');
    t.ok(agent.isOpen, 'bad frames never close the connection');

    // oidc.token.request without identity: the spec's deferral.
    agent.sendRaw({ type: 'oidc.token.request', jobId: jobs['build']!.id, requestId: 'r1', audience: 'aud' });
    t.same(await agent.waitFor('oidc.token.response'), { type: 'oidc.token.response', requestId: 'r1', deferred: true, code: 'unavailable' });
    // A handler registered by another subsystem answers instead.
    node.service.handle('oidc.token.request', async (who, m) => ({ type: 'oidc.token.response', requestId: m.requestId, token: `t-${who.agentId}`, expiresIn: 600 }));
    agent.sendRaw({ type: 'oidc.token.request', jobId: jobs['build']!.id, requestId: 'r2', audience: 'aud' });
    t.match(await agent.waitFor('oidc.token.response', (m) => m.requestId === 'r2'), { token: 't-n1' });

    // First message must be agent.register.
    const rude = await TestAgent.connect({ url: node.url, agentId: 'rude', register: false });
    rude.sendRaw({ type: 'job.context', jobId: 'j', nodeVersion: '24', os: 'linux', arch: 'x64', sandbox: 'bare-metal' });
    t.match(await rude.closed, { code: WS_CLOSE_PROTOCOL_ERROR, reason: /first message must be agent.register/ });

    // Reserved labels are refused.
    const spoof = await TestAgent.connect({ url: node.url, agentId: 'spoof', labels: ['svc:os:windows'] });
    t.match(await spoof.closed, { code: WS_CLOSE_REFUSED, reason: /reserved/ });

    // A peer that stops answering pings is dropped and marked disconnected.
    const dead = await TestAgent.online({ url: node.url, agentId: 'dead', pong: false });
    await dead.closed;
    await until('dead agent marked disconnected', async () =>
      ((await db.pool.oneFirst(sql.unsafe`SELECT connected FROM agents WHERE id = 'dead'`)) as boolean) ? undefined : true,
    );
    t.pass('heartbeat detected the dead socket');
    await agent.close();
  });
});
