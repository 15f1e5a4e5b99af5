// Provenance deferred (test/e2e/provenance/scenario.ts has the stack: REAL processes and
// PostgreSQL). With the only key revoked, the step gets `deferred` and the statements are frozen;
// with the orchestrator down an operator signs one (`svc-admin attestations backfill`, origin
// offline-backfill); a new orchestrator node signs the other at its start (origin deferred). Both
// bundles verify, and their tokens carry attestation_origin and the statement_hash the step was
// given. The live path is test/e2e/provenance.test.ts.
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { sql } from '../../kernel/services/db/index.ts';
import { until } from '../fixtures/runs.ts';
import { exportTrustRoot, outsideVerify, provenanceScenario, pythonSkip, sha256, stepResult, svcVerify, WORKFLOW } from './provenance/scenario.ts';

t.setTimeout(2_400_000);

await provenanceScenario(t, async (t, { stack, issuer, trustRoot, download }) => {
  await t.test('deferred: no key ready → frozen statements, fulfilled later (offline-backfill by svc-admin, deferred by a node)', async (t) => {
    const listed = await stack.admin(['signing-key', 'list', '--json']);
    t.equal(listed.code, 0, listed.stderr);
    const active = (JSON.parse(listed.stdout) as { keys: Array<{ kid: string; status: string }> }).keys.filter((k) => k.status === 'active');
    t.equal(active.length, 1, 'one active key');
    const revoked = await stack.admin(['signing-key', 'revoke', '--reason', 'e2e: no key ready', '--', active[0]!.kid]);
    t.equal(revoked.code, 0, revoked.stderr);

    const sha = await stack.pushWorkflow({ '.svc/workflows/release.ts': WORKFLOW }, 'release workflow, no key ready');
    const run = await stack.waitForRun(sha, 300_000);
    const jobs = await stack.jobsOf(run.id);
    t.equal(run.status, 'completed', jobs.map((j) => `${j.display_name} ${j.status} ${j.reason ?? ''}`).join('\n'));
    const result = await stepResult(t, stack, run.id);
    t.equal(result.deferred, true, 'the step learned the signature is deferred');
    t.same(result.bundlePaths, [], 'no bundle yet');
    t.match(result.attestations, [
      { subject: 'dist/app.tgz', deferred: true, code: 'unavailable', statementHash: /^[0-9a-f]{64}$/ },
      { subject: 'dist/sbom.json', deferred: true, code: 'unavailable', statementHash: /^[0-9a-f]{64}$/ },
    ]);
    const [first, second] = result.attestations;
    if (first === undefined || second === undefined) return;

    const pending = await stack.admin(['attestations', 'list', '--pending', '--run', run.id, '--json']);
    t.equal(pending.code, 0, pending.stderr);
    t.same((JSON.parse(pending.stdout) as { attestations: Array<{ id: string }> }).attestations.map((a) => a.id).sort(), [first.attestationId, second.attestationId].sort());
    const early = await stack.admin(['attestations', 'show', first.attestationId]);
    t.equal(early.code, 1, 'a pending attestation has no bundle yet');
    t.match(early.stderr, /still pending \(unavailable\).*svc-admin attestations backfill/);
    const noKey = await stack.admin(['attestations', 'backfill']);
    t.equal(noKey.code, 1, 'backfill without a key refuses');
    t.match(noKey.stderr, /SVC_ERR_IDENTITY_BACKFILL_NO_KEY|svc-admin signing-key generate/);

    // The orchestrator goes offline; the operator makes a key and signs one statement.
    await stack.orchestrator.stop();
    const generated = await stack.admin(['signing-key', 'generate']);
    t.equal(generated.code, 0, generated.stderr);
    const backfill = await stack.admin(['attestations', 'backfill', '--limit', '1', '--json']);
    t.equal(backfill.code, 0, backfill.stderr);
    t.match(JSON.parse(backfill.stdout), { fulfilled: 1, remaining: 1 });

    // A node comes back; its sweep signs the remaining statement as `deferred`.
    await stack.startOrchestrator();
    const out = join(stack.root, 'deferred');
    await until('the node to sign the remaining statement', async () => {
      const open = await stack.pool.oneFirst(sql.unsafe`SELECT count(*)::int AS n FROM attestations WHERE run_id = ${run.id} AND status = 'pending'`);
      return Number(open) === 0 ? true : undefined;
    }, 180_000, 500);
    const rows = await stack.admin(['attestations', 'list', '--run', run.id, '--json']);
    t.equal(rows.code, 0, rows.stderr);
    const bundles = (JSON.parse(rows.stdout) as { attestations: Array<{ id: string; status: string; attestation_origin: string | null }> }).attestations;
    t.same(bundles.map((b) => b.status), ['fulfilled', 'fulfilled']);
    const origins = Object.fromEntries(bundles.map((b) => [b.id, b.attestation_origin]));
    // Both statements were frozen by one step (often in the same millisecond), so which one the
    // operator's `--limit 1` took is not fixed: one of each origin is.
    t.same([origins[first.attestationId], origins[second.attestationId]].sort(), ['deferred', 'offline-backfill'], 'one backfilled by the operator, the other fulfilled by the node');

    await download(t, run.id, 'app', out);
    await exportTrustRoot(t, stack, trustRoot);
    for (const entry of [first, second]) {
      const origin = origins[entry.attestationId] as 'offline-backfill' | 'deferred';
      const bundleFile = join(out, `${entry.subject}.svc.json`);
      const shown = await stack.admin(['attestations', 'show', entry.attestationId, '--out', bundleFile]);
      t.equal(shown.code, 0, shown.stderr);
      const artifact = join(out, entry.subject);
      t.equal(await sha256(artifact), entry.sha256);
      const bundle = JSON.parse(await readFile(bundleFile, 'utf8')) as { attestationOrigin: string; statementHash: string };
      t.equal(bundle.attestationOrigin, origin);
      t.equal(bundle.statementHash, entry.statementHash, 'the frozen statement is what got signed');
      for (const trust of [{ trustRoot }, { issuer }]) {
        const verified = await svcVerify(stack, artifact, bundleFile, trust);
        t.equal(verified.code, 0, `${origin} ${'issuer' in trust ? 'online' : 'offline'}: ${verified.stderr}`);
        t.match(verified.verdict, { ok: true, attestationOrigin: origin, claims: { attestation_origin: origin, statement_hash: entry.statementHash, svc_run_id: run.id } });
      }
      if (!pythonSkip) {
        const outside = await outsideVerify(artifact, bundleFile, { trustRoot });
        t.equal(outside.code, 0, JSON.stringify(outside.result));
      }
    }
  });
});
