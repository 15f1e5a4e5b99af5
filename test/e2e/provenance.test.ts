// Provenance from a real step, live (test/e2e/provenance/scenario.ts has the stack: REAL processes
// and PostgreSQL). A pushed workflow builds two files and calls ctx.attestProvenance on them, then
// uploads them as a run artifact. The bundles come back as run artifacts (`svc runs download`);
// the statement is an in-toto Statement v1 with an SLSA provenance v1 predicate naming this run;
// `svc verify-attestation` accepts each bundle offline (trust root from `svc-admin signing-key
// export`) and online (the issuer over HTTP); an outside verifier (securesystemslib, Python:
// test/fixtures/dsse-verify.py) accepts them too; a tampered artifact is refused by all three.
// The Sigstore bundle v0.3 of the same run (`<artifact>.sigstore.json`) verifies with sigstore-js
// (against the trusted root and keys fetched from the running orchestrator), securesystemslib (with
// the PEM `svc verify-attestation --print-public-key` prints) and `svc verify-attestation` offline
// and online; a tampered subject, statement or signature fails each of them.
// The deferred path (no key ready) is test/e2e/provenance-deferred.test.ts.
import { join } from 'node:path';
import { readFile, writeFile } from 'node:fs/promises';
import t from 'tap';
import { REPOSITORY } from '../fixtures/jobs-stack.ts';
import { sigstoreVerify, TAMPERS, type Json } from '../fixtures/sigstore-verify.ts';
import { exportTrustRoot, outsideVerify, provenanceScenario, pythonSkip, sha256, statementOf, stepResult, svcVerify, WORKFLOW } from './provenance/scenario.ts';

t.setTimeout(2_400_000);

await provenanceScenario(t, async (t, { stack, issuer, trustRoot, download }) => {
  await t.test('live: a step attests its files; the bundles verify offline, online and with securesystemslib; tampering is refused', async (t) => {
    const sha = await stack.pushWorkflow({ '.svc/workflows/release.ts': WORKFLOW }, 'release workflow');
    const run = await stack.waitForRun(sha, 300_000);
    const jobs = await stack.jobsOf(run.id);
    t.equal(run.status, 'completed', jobs.map((j) => `${j.display_name} ${j.status} ${j.reason ?? ''}`).join('\n'));
    const build = jobs.find((j) => j.name === 'build');
    const result = await stepResult(t, stack, run.id);
    t.same(result.bundlePaths, ['dist/app.tgz.svc.json', 'dist/sbom.json.svc.json'], 'bundles next to the subjects, as the step named them');
    t.equal(result.deferred, false);
    t.match(result.attestations, [
      { subject: 'dist/app.tgz', deferred: false, bundlePath: 'dist/app.tgz.svc.json', artifact: 'app.tgz.svc.json', sigstoreBundlePath: 'dist/app.tgz.sigstore.json', sigstoreArtifact: 'app.tgz.sigstore.json' },
      { subject: 'dist/sbom.json', deferred: false, bundlePath: 'dist/sbom.json.svc.json', artifact: 'sbom.json.svc.json' },
    ]);

    const out = join(stack.root, 'live');
    for (const name of ['app', 'app.tgz.svc.json', 'sbom.json.svc.json', 'app.tgz.sigstore.json']) await download(t, run.id, name, out);
    const artifact = join(out, 'dist', 'app.tgz');
    const bundleFile = join(out, 'dist', 'app.tgz.svc.json');
    t.equal(await sha256(artifact), result.attestations[0]?.sha256, 'the agent hashed the very bytes the run stored');

    const bundle = JSON.parse(await readFile(bundleFile, 'utf8')) as { attestationOrigin: string; issuer: string; statementHash: string; dsseEnvelope: { payload: string; signatures: Array<{ sig: string }> } };
    t.equal(bundle.attestationOrigin, 'live');
    t.equal(bundle.issuer, issuer);
    t.equal(bundle.statementHash, result.attestations[0]?.statementHash);
    const statement = statementOf(bundle);
    t.match(statement, {
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: 'dist/app.tgz', digest: { sha256: await sha256(artifact) } }],
      predicateType: 'https://slsa.dev/provenance/v1',
      predicate: {
        buildDefinition: {
          buildType: 'https://svc.dev/build/v1',
          externalParameters: { repository: REPOSITORY, sha, ref: 'refs/heads/main', event_name: 'push', workflow: { name: 'release', ref: `release@${sha}` }, job: 'build', stepParameters: { target: 'linux-x64' } },
          internalParameters: {
            iss: issuer,
            sub: `repo:${REPOSITORY}:ref:refs/heads/main:workflow:release`,
            repository: REPOSITORY,
            sha,
            svc_run_id: run.id,
            svc_job_id: build?.id,
            workflow_ref: `release@${sha}`,
            source_origin: 'triggered',
            orchestrator_id: String,
          },
          resolvedDependencies: [{ name: REPOSITORY, digest: { gitCommit: sha } }],
        },
        runDetails: { builder: { id: issuer }, metadata: { invocationId: `${issuer}/runs/${run.id}/jobs/${build?.id}`, startedOn: String } },
      },
    });
    t.notOk('aud' in statement['predicate'].buildDefinition.internalParameters, 'per-token claims stay out of the statement');
    t.ok(Buffer.from(bundle.dsseEnvelope.signatures[0]!.sig, 'base64')[0] === 0x30, 'the DSSE signature is DER (an ASN.1 sequence)');

    await exportTrustRoot(t, stack, trustRoot);
    const offline = await svcVerify(stack, artifact, bundleFile, { trustRoot });
    t.equal(offline.code, 0, `offline: ${offline.stderr}`);
    t.match(offline.verdict, { ok: true, attestationOrigin: 'live', subject: { name: 'dist/app.tgz' }, claims: { svc_run_id: run.id, attestation_origin: 'live', statement_hash: null } });
    const online = await svcVerify(stack, artifact, bundleFile, { issuer });
    t.equal(online.code, 0, `online: ${online.stderr}`);
    t.match(online.verdict, { ok: true, attestationOrigin: 'live' });
    const sbom = await svcVerify(stack, join(out, 'dist', 'sbom.json'), join(out, 'dist', 'sbom.json.svc.json'), { trustRoot });
    t.match(sbom.verdict, { ok: true, subject: { name: 'dist/sbom.json' } }, 'the second subject has its own bundle');
    const text = await stack.svc(['verify-attestation', artifact, '--bundle', bundleFile, '--trust-root', trustRoot]);
    t.match(text.stdout, /^verified: dist\/app\.tgz \(sha256 [0-9a-f]{64}\) signed by http:\/\/127\.0\.0\.1:\d+ key \S+ \[live\]/);

    await t.test('outside verifier: securesystemslib (python3)', { skip: pythonSkip }, async (t) => {
      for (const trust of [{ trustRoot }, { issuer }]) {
        const checked = await outsideVerify(artifact, bundleFile, trust);
        t.equal(checked.code, 0, JSON.stringify(checked.result));
        t.match(checked.result, { ok: true, subject: 'dist/app.tgz', predicateType: 'https://slsa.dev/provenance/v1' });
      }
    });

    await t.test('a tampered artifact is refused', async (t) => {
      const tampered = join(out, 'tampered-app.tgz');
      await writeFile(tampered, Buffer.concat([await readFile(artifact), Buffer.from('x')]));
      for (const trust of [{ trustRoot }, { issuer }]) {
        const refused = await svcVerify(stack, tampered, bundleFile, trust);
        t.equal(refused.code, 1, 'exit code 1');
        t.match(refused.verdict, { ok: false, reason: 'artifact_mismatch' });
      }
      const text = await stack.svc(['verify-attestation', tampered, '--bundle', bundleFile, '--trust-root', trustRoot]);
      t.equal(text.code, 1);
      t.match(text.stderr, /not verified \(artifact_mismatch\): artifact sha256 [0-9a-f]{64} is not the attested [0-9a-f]{64}/);
      if (!pythonSkip) {
        const outside = await outsideVerify(tampered, bundleFile, { trustRoot });
        t.equal(outside.code, 1, 'the outside verifier refuses it too');
        t.match(outside.result, { ok: false, error: /is not a subject of the statement/ });
      }
      // A statement altered in the bundle fails the signature with the outside verifier as well.
      const forged = JSON.parse(await readFile(bundleFile, 'utf8')) as { dsseEnvelope: { payload: string } };
      const forgedStatement = statementOf(forged);
      forgedStatement['subject'][0].digest.sha256 = await sha256(tampered);
      forged.dsseEnvelope.payload = Buffer.from(JSON.stringify(forgedStatement)).toString('base64');
      const forgedFile = join(out, 'forged.svc.json');
      await writeFile(forgedFile, JSON.stringify(forged));
      t.match((await svcVerify(stack, tampered, forgedFile, { trustRoot })).verdict, { ok: false, reason: 'statement_tampered' });
      if (!pythonSkip) t.match((await outsideVerify(tampered, forgedFile, { trustRoot })).result, { ok: false, error: /no envelope signature verifies/ });
    });

    await t.test('the Sigstore bundle: sigstore-js, securesystemslib and svc verify-attestation (offline, online) accept it and refuse each tampering', async (t) => {
      const sigstoreFile = join(out, 'dist', 'app.tgz.sigstore.json');
      const genuine = JSON.parse(await readFile(sigstoreFile, 'utf8')) as Json;
      const digest = await sha256(artifact);
      t.equal(genuine.mediaType, 'application/vnd.dev.sigstore.bundle.v0.3+json');
      t.same(genuine.dsseEnvelope, bundle.dsseEnvelope, 'one signature, two framings');
      const pem = await stack.svc(['verify-attestation', '--bundle', sigstoreFile, '--trust-root', trustRoot, '--print-public-key']);
      t.equal(pem.code, 0, pem.stderr);
      t.match(pem.stdout, /^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n$/);
      const publicKey = join(out, 'svc-key.pem');
      await writeFile(publicKey, pem.stdout);

      /** The three verifiers (svc's twice: offline, online) on one bundle, side by side; each verdict. */
      const verdicts = async (label: string, candidate: Json) => {
        const file = join(out, `${label.replaceAll(' ', '-')}.sigstore.json`);
        await writeFile(file, JSON.stringify(candidate));
        const [sigstoreJs, outside, offline, online] = await Promise.all([
          sigstoreVerify(issuer, candidate, digest).then(({ subject }) => ({ ok: true, subject }), (error: { code?: string; message: string }) => ({ ok: false, code: error.code, message: error.message })),
          pythonSkip ? undefined : outsideVerify(artifact, file, { publicKey }),
          svcVerify(stack, artifact, file, { trustRoot }),
          svcVerify(stack, artifact, file, { issuer }),
        ]);
        return { label, sigstoreJs, outside, offline, online };
      };
      const candidates: Array<[string, Json]> = [['genuine', genuine], ...Object.entries(TAMPERS).map(([name, tamper]): [string, Json] => [name, tamper(genuine)])];
      for (const [candidateLabel, candidate] of candidates) {
        const { label, sigstoreJs, outside, offline, online } = await verdicts(candidateLabel, candidate);
        const ok = label === 'genuine';
        t.match(sigstoreJs, ok ? { ok: true, subject: { name: 'dist/app.tgz' } } : { ok: false, code: 'SIGNATURE_ERROR' }, `sigstore-js: ${label}`);
        if (outside) t.match(outside, ok ? { code: 0, result: { ok: true, subject: 'dist/app.tgz' } } : { code: 1, result: { ok: false, error: /no envelope signature verifies/ } }, `securesystemslib: ${label}`);
        for (const [where, verdict] of [['offline', offline], ['online', online]] as const) {
          t.equal(verdict.code, ok ? 0 : 1, `svc verify-attestation ${where}: ${label}: exit code`);
          t.match(verdict.verdict, ok ? { ok: true, format: 'sigstore-v0.3', subject: { name: 'dist/app.tgz' }, claims: { svc_run_id: run.id } } : { ok: false, reason: 'signature_invalid' }, `svc verify-attestation ${where}: ${label}`);
        }
        const cell = (passed: boolean | undefined, why?: string) => (passed === undefined ? 'skipped' : passed ? 'verified' : `refused (${why})`);
        t.comment(`${label}: sigstore-js ${cell(sigstoreJs.ok, 'code' in sigstoreJs ? sigstoreJs.code : '')}; securesystemslib ${cell(outside?.result.ok, outside?.result.error?.replace(/ with a key .*/, ''))}; svc offline ${cell(offline.verdict.ok, offline.verdict.reason)}; svc online ${cell(online.verdict.ok, online.verdict.reason)}`);
      }
    });
  });
});
