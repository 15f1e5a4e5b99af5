// One push through the REAL relay and orchestrator (in-process, real sockets, real PostgreSQL) to
// a finished run on the REAL agent (process sandbox, real step runner child process), with
// tracing on for all three: the spans they export over OTLP/HTTP protobuf are decoded by a
// receiver using the official protobuf definitions (test/fixtures/otlp-receiver.ts) and checked
// against docs/tracing.md: one trace; every span's parent in it; the spans of the whole path
// (relay receive, forward, each ingest step, the run, queue wait, dispatch, the job with its
// source and set-up phases and steps); a step's own span, made from TRACEPARENT in the step's
// process with the SDK, is a child of that step's span; and no span of svc leaves more than
// 5 ms of its duration unaccounted for by its children and the WebSocket hops between them
// ("Coverage" in docs/tracing.md).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { startOrchestrator, ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/app.ts';
import { createAgentToken } from '../../../kernel/orchestrator/dispatch/tokens.ts';
import { createSource } from '../../../kernel/orchestrator/sources/store.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../../kernel/orchestrator/subsystems.ts';
import { migrateRelay, provisionOrg, startRelay } from '../../../kernel/relay/index.ts';
import { hmacSha256Hex } from '../../../kernel/services/crypto/hmac.ts';
import { createDatabase, migrate, sql } from '../../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../../plugins/builtin.ts';
import { workflowToLockEntry } from '../../../workflow/compile/lock-entry.ts';
import { registerSdkResolution } from '../../../workflow/sdk-resolution.ts';
import { gitRepo, makeTree } from '../../agent/fixtures/trees.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { pushPayload, repo } from '../../fixtures/github-payloads.ts';
import { startOtlpReceiver, type ReceivedSpan } from '../../fixtures/otlp-receiver.ts';
import { MIN_PROGRAM_TIMEOUT_MS, REPO_ROOT, startProgram } from '../../fixtures/programs.ts';
import { until } from '../../fixtures/runs.ts';
import { Forge } from '../../kernel/orchestrator/ingest/harness.ts';
import { coverageGaps, messageHops } from './coverage.ts';

t.setTimeout(120_000);

const STEP_SPAN_MODULE = pathToFileURL(join(import.meta.dirname, '../../fixtures/otel-step-span.ts')).href;

const workflowText = (endpoint: string) => `import { job, push, workflow } from 'svc/sdk';
export default workflow('ci', {
  on: push(),
  jobs: {
    build: job({
      runsOn: 'linux',
      steps: (s) => s
        .step('prepare', async () => ({ ok: true }))
        .step('own-span', async () => {
          const { emitStepSpan } = await import(${JSON.stringify(STEP_SPAN_MODULE)});
          return { parent: await emitStepSpan(${JSON.stringify(endpoint)}) };
        }),
    }),
  },
});
`;

const SVC = (s: ReceivedSpan) => s.service.startsWith('svc-');

t.test('a push through the relay to a finished run is one trace covering the whole path', async (t) => {
  const receiver = await startOtlpReceiver(t);
  // Short batches: the spans are there soon after the run ends.
  const otel = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50' };
  const root = await mkdtemp(join(tmpdir(), 'svc-trace-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const tree = await makeTree(join(root, 'repo'), { '.svc/workflows/ci.ts': workflowText(receiver.url) });
  const sha = await gitRepo(tree.dir);
  registerSdkResolution();
  const mod = (await import(pathToFileURL(join(tree.dir, '.svc/workflows/ci.ts')).href)) as { default: unknown };
  const entry = workflowToLockEntry(mod.default, { sourcePath: '.svc/workflows/ci.ts', exportName: 'default', contentHash: tree.contentHash });

  await eachDatabase(t, async (t, db) => {
    receiver.spans.length = 0;
    const relayDbUrl = await db.extraDatabase();
    const relay = await startRelay({ logger: testLogger, env: { ...otel, SVC_RELAY_DATABASE_URL: relayDbUrl, SVC_RELAY_PORT: '0', SVC_RELAY_HOST: '127.0.0.1', SVC_DATA_DIR: join(root, `relay-${db.kind}`) } });
    t.teardown(() => relay.stop());
    const relayDb = await createDatabase({ url: relayDbUrl, logger: testLogger, maxPoolSize: 1 });
    t.teardown(() => relayDb.end());
    await migrateRelay(relayDb, testLogger);
    const orgToken = (await provisionOrg(relayDb, 'acme')).token;

    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const masterKey = randomBytes(32);
    const { secret } = await createSource(db.pool, masterKey, { orgId: 'acme', providerKind: 'forge', targetId: '7' });
    const forge = new Forge();
    forge.putLock(sha, [entry]);
    const orchestrator = await startOrchestrator({
      env: {
        ...otel,
        SVC_DATABASE_URL: db.url,
        SVC_DATA_DIR: join(root, `orch-${db.kind}`),
        SVC_SECRET_KEY: masterKey.toString('base64'),
        SVC_SERVER_PORT: '0',
        SVC_SERVER_HOST: '127.0.0.1',
        SVC_PLATFORM_URL: relay.url,
        SVC_PLATFORM_TOKEN: orgToken,
        SVC_INSTANCE_ID: `trace-${randomUUID().slice(0, 8)}`,
      },
      cwd: root,
      logger: testLogger,
      subsystems: ORCHESTRATOR_SUBSYSTEMS,
      plugins: (pluginEnv) => {
        const chosen = orchestratorPlugins(pluginEnv);
        return { ...chosen, builtIns: [...chosen.builtIns, forge.plugin()] };
      },
    });
    t.teardown(() => orchestrator.stop());
    const agentToken = (await createAgentToken(db.pool, { description: 'trace test' })).token;
    // The agent is its own process (svc-agent), reading OTEL_* like the servers.
    const agent = await startProgram(join(REPO_ROOT, 'bin/svc-agent.ts'), 'svc-agent', {
      env: {
        ...process.env,
        ...otel,
        SVC_ORCHESTRATOR_URL: orchestrator.url,
        SVC_AGENT_TOKEN: agentToken,
        SVC_AGENT_ID: `trace-${db.kind}`,
        SVC_AGENT_WORK_DIR: join(root, `agent-${db.kind}`),
        SVC_AGENT_LABELS: 'linux',
        SVC_AGENT_SANDBOX: 'process',
        SVC_AGENT_BWRAP: 'never',
      },
      readyTimeoutMs: MIN_PROGRAM_TIMEOUT_MS,
    });
    t.teardown(() => agent.stop());
    await until('the relay to route the source', async () => ((await relayDb.maybeOne(sql.unsafe`select 1 as one from relay_sources where org_id = 'acme'`)) === null ? undefined : true), 20_000, 50);

    const deliveryId = randomUUID();
    const body = Buffer.from(JSON.stringify({ ...pushPayload({ after: sha }), repository: { ...repo('acme/app'), clone_url: pathToFileURL(tree.dir).href } }));
    const res = await fetch(`${relay.url}/webhook/acme/forge`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-provider-event': 'push', 'x-provider-delivery': deliveryId, 'x-provider-hook-installation-target-id': '7', 'x-hub-signature-256': `sha256=${hmacSha256Hex(secret, body)}` },
    });
    t.equal(res.status, 200, 'the relay took the push');
    const run = await until('the run to finish', async () => {
      const row = (await db.pool.maybeOne(sql.unsafe`select id::text as id, status, reason from runs where delivery_id = ${deliveryId}`)) as { id: string; status: string; reason: string | null } | null;
      return row !== null && ['completed', 'failed', 'cancelled', 'skipped'].includes(row.status) ? row : undefined;
    }, 60_000, 50);
    t.equal(run.status, 'completed', run.reason ?? 'the run completed');

    const spans = await receiver.waitFor((all) => all.some((s) => s.name === 'RUN ci') && all.some((s) => s.name === 'user work') && all.some((s) => s.name === 'webhook receive'));
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const names = spans.map((s) => s.name);
    t.equal(new Set(spans.map((s) => s.traceId)).size, 1, `one trace: ${names.join(', ')}`);
    const roots = spans.filter((s) => s.parentSpanId === undefined);
    t.same(roots.map((s) => `${s.service}: ${s.name}`), ['svc-relay: webhook receive'], 'the relay receive span is the only root');
    t.same(spans.filter((s) => s.parentSpanId !== undefined && !byId.has(s.parentSpanId)).map((s) => s.name), [], 'every parent is in the trace');

    const one = (name: string, service?: string): ReceivedSpan => {
      const found = spans.filter((s) => s.name === name && (service === undefined || s.service === service));
      t.equal(found.length, 1, `one "${name}" span`);
      return found[0]!;
    };
    const parentOf = (s: ReceivedSpan) => (s.parentSpanId === undefined ? undefined : byId.get(s.parentSpanId)?.name);
    const receive = one('webhook receive');
    const forward = one('relay forward');
    t.equal(parentOf(forward), 'webhook receive');
    // A step is a span under its parent when it took 1 ms or more (SVC_TRACE_SPAN_MIN_MS), else an
    // event of the parent with its duration, or an entry of the parent's "<label> steps" event when
    // short steps came back to back: either way once, and in the right place.
    const step = (label: string, short: string, parent: ReceivedSpan): void => {
      const name = `${label} ${short}`;
      const asSpans = spans.filter((s) => s.name === name);
      const asEvents = parent.events.filter((e) => e.name === name);
      const entry = new RegExp(`(?:^|, )${short} (\\d+\\.\\d{3})(?:,|$)`);
      const inRuns = parent.events.filter((e) => e.name === `${label} steps`).flatMap((e) => entry.exec(String(e.attributes['svc.steps']))?.[1] ?? []);
      t.equal(asSpans.length + asEvents.length + inRuns.length, 1, `"${name}" once (${asSpans.length} span, ${asEvents.length} event, ${inRuns.length} in a run of steps)`);
      if (asSpans[0] !== undefined) t.equal(asSpans[0].parentSpanId, parent.spanId, `the "${name}" span is a child of "${parent.name}"`);
      if (asSpans[0] !== undefined) t.ok(asSpans[0].end - asSpans[0].start >= 1, `"${name}" is a span because it took 1 ms or more`);
      if (asEvents[0] !== undefined) t.ok(Number(asEvents[0].attributes['svc.duration_ms']) < 1, `"${name}" is an event because it took under 1 ms (svc.duration_ms)`);
      if (inRuns[0] !== undefined) t.ok(Number(inRuns[0]) < 1, `"${name}" is in a run of short steps because it took under 1 ms (${inRuns[0]} ms)`);
    };
    step('relay', 'dedup', receive);
    step('relay', 'admission', receive);
    step('relay', 'answer', receive);
    const ingest = one('orchestrator ingest', 'svc-orchestrator');
    t.equal(ingest.parentSpanId, forward.spanId, 'the orchestrator continues the relay forward span (webhook.deliver traceparent)');
    for (const name of ['admission', 'verify-signature', 'dedup', 'resolve-provider', 'normalize', 'repository', 'trust', 'lock-fetch', 'registrations', 'changed-files', 'match', 'requires', 'caches', 'dispatch', 'delivery-record', 'commit']) {
      step('ingest', name, ingest);
    }
    const stepSpans = spans.filter((s) => s.name.startsWith('ingest ')).length;
    t.comment(`ingest steps: ${stepSpans} spans, ${ingest.events.length} events`);
    const runSpan = one('RUN ci');
    t.equal(runSpan.parentSpanId, ingest.spanId, 'the run span sits under the ingest span');
    t.match(runSpan.attributes, { 'cicd.pipeline.name': 'ci', 'cicd.pipeline.run.id': run.id, 'cicd.pipeline.result': 'success', 'vcs.ref.head.revision': sha, 'vcs.repository.name': 'acme/app' });
    const runChildren = spans.filter((s) => s.parentSpanId === runSpan.spanId);
    for (const name of ['queue wait', 'dispatch', 'job build', 'job report']) t.ok(runChildren.some((s) => s.name === name), `the run has a "${name}" span`);
    const job = spans.find((s) => s.name === 'job build' && s.service === 'svc-agent')!;
    t.match(job.attributes, { 'cicd.pipeline.task.name': 'build', 'cicd.pipeline.task.run.result': 'success', 'cicd.pipeline.run.id': run.id });
    const jobChildren = spans.filter((s) => s.parentSpanId === job.spanId).map((s) => s.name);
    for (const name of ['work dir', 'source restore and checkout', 'content hash', 'dependencies restore', 'runner spawn', 'step prepare', 'step own-span', 'job finish']) t.ok(jobChildren.includes(name), `the job has a "${name}" span`);
    const ownStep = one('step own-span');
    const user = one('user work', 'user-step');
    t.equal(user.parentSpanId, ownStep.spanId, "the step's own span (from TRACEPARENT in its process) is a child of the step span");
    t.equal(user.attributes['user.traceparent'], `00-${ownStep.traceId}-${ownStep.spanId}-01`, 'TRACEPARENT named the step span');

    // Coverage: every svc span with children has no stretch over 5 ms that none of them covers.
    const svcSpans = spans.filter(SVC);
    const hops = messageHops(svcSpans);
    t.ok(hops.some((h) => h.name === 'webhook.deliver') && hops.every((h) => h.end - h.start < 2_000), 'hops sit between the spans on either side of a WebSocket');
    t.comment(`hops (ms): ${hops.map((h) => `${h.name} ${(h.end - h.start).toFixed(1)}`).join(', ')}`);
    const gaps = coverageGaps(svcSpans, 5, hops);
    if (gaps.length > 0) {
      const t0 = receive.start;
      const line = (s: ReceivedSpan) => `${(s.start - t0).toFixed(1).padStart(8)} ${(s.end - t0).toFixed(1).padStart(8)} ${s.service.padEnd(17)} ${s.name} <- ${parentOf(s) ?? '-'}`;
      t.comment([...spans].sort((a, b) => a.start - b.start).map(line).join('\n'));
    }
    t.same(gaps.map((g) => `${g.span} (${g.service}): ${g.from.toFixed(1)}..${g.to.toFixed(1)} ms after its start, ${(g.to - g.from).toFixed(1)} ms`), [], 'no span has more than 5 ms unaccounted for');
    t.ok(receive.start <= ingest.start && runSpan.end >= job.end, 'the trace spans receive to the run end');
  });
});
