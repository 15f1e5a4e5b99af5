// Run artifacts through a real orchestrator (real PostgreSQL, filesystem storage serving its
// pre-signed URLs over HTTP) and test agents on real sockets: two-phase uploads, the per-run
// content-addressed layout, names unique per run, hostile names, size/count/retention limits,
// downloads from this run and from the upstream run, the relay's list and chunk reads, and the
// retention sweep.
import { createHash, randomUUID } from 'node:crypto';
import t from 'tap';
import { ARTIFACT_CHUNK_BYTES, listRunArtifacts, readArtifactChunk } from '../../../../kernel/orchestrator/artifacts/api.ts';
import { sweepArtifacts } from '../../../../kernel/orchestrator/artifacts/sweep.ts';
import { sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { startArtifactsNode, runWithAgents } from '../../../fixtures/artifacts-node.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import type { TestAgent } from '../../../fixtures/test-agent.ts';

// Generous: the machine's two cores may be busy with other suites.

/** A hang guard for one answer, far above any answer time on a busy machine. */
const ANSWER_MS = 300_000;

const startNode = startArtifactsNode;

const digestOf = (body: Buffer | string): string => `sha256:${createHash('sha256').update(body).digest('hex')}`;

interface UploadOutcome {
  code?: string;
  artifact?: { name: string; digest: string; sizeBytes: number; fileCount: number; runId: string };
}

/** Uploads like the agent does: request → PUT → commit. */
async function upload(agent: TestAgent, jobId: string, name: string, body: Buffer | string, extra: { digest?: string; sizeBytes?: number; retentionDays?: number; fileCount?: number } = {}): Promise<UploadOutcome> {
  const requestId = randomUUID();
  const size = Buffer.byteLength(body);
  agent.sendRaw({
    type: 'artifact.upload.request',
    jobId,
    requestId,
    name,
    digest: extra.digest ?? digestOf(body),
    sizeBytes: extra.sizeBytes ?? size,
    fileCount: extra.fileCount ?? 1,
    ...(extra.retentionDays === undefined ? {} : { retentionDays: extra.retentionDays }),
  });
  const response = await agent.waitFor('artifact.upload.response', (m) => m.requestId === requestId, ANSWER_MS);
  if (response.error) return { code: response.error.code };
  const put = await fetch(response.uploadUrl as string, { method: 'PUT', body });
  if (!put.ok) throw new Error(`PUT → ${put.status}`);
  agent.sendRaw({ type: 'artifact.commit.request', jobId, requestId });
  const commit = await agent.waitFor('artifact.commit.response', (m) => m.requestId === requestId, ANSWER_MS);
  return commit.error ? { code: commit.error.code } : { artifact: commit.artifact as UploadOutcome['artifact'] };
}

async function download(agent: TestAgent, jobId: string, name: string, from?: 'current' | 'upstream') {
  const requestId = randomUUID();
  agent.sendRaw({ type: 'artifact.download.request', jobId, requestId, name, ...(from === undefined ? {} : { from }) });
  return agent.waitFor('artifact.download.response', (m) => m.requestId === requestId, ANSWER_MS);
}

async function fetchBytes(url: string): Promise<Buffer> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET → ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

const count = async (pool: DatabasePool, table: 'run_artifacts' | 'run_artifact_uploads'): Promise<number> =>
  Number(await pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM ${sql.identifier([table])}`));

t.test('upload, commit, download; per-run content-addressed layout; names unique per run', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    const { runId, jobs, agents } = await runWithAgents(t, node, db, 'u');

    const body = Buffer.from('packed tarball bytes');
    const done = await upload(agents.a, jobs.a, 'dist', body, { fileCount: 3 });
    t.match(done.artifact, { name: 'dist', digest: digestOf(body), sizeBytes: body.length, fileCount: 3, runId });
    const hex = digestOf(body).slice('sha256:'.length);
    const keys = (await node.storage.list(`artifacts/org-1/${runId}/`)).objects.map((o) => o.key);
    t.same(keys, [`artifacts/org-1/${runId}/${hex}.tar.gz`], 'one content-addressed object in the run namespace; the temporary object is gone');
    const row = await db.pool.one(sql.unsafe`SELECT name, digest, size_bytes::int AS size, file_count, job_id::text AS job,
      round(extract(epoch FROM expires_at - created_at) / 86400)::int AS days FROM run_artifacts`);
    t.same(row, { name: 'dist', digest: digestOf(body), size: body.length, file_count: 3, job: jobs.a, days: 30 }, 'row with the default 30-day retention');

    // Job b of the same run downloads it; the URL serves exactly the bytes with that digest.
    const got = await download(agents.b, jobs.b, 'dist');
    t.match(got.artifact, { name: 'dist', digest: digestOf(body) });
    t.same(await fetchBytes(got.downloadUrl as string), body);

    // Another job may not take the name; the same job storing it again replaces its artifact.
    t.same(await upload(agents.b, jobs.b, 'dist', 'other'), { code: 'SVC_ERR_ARTIFACT_EXISTS' });
    const again = await upload(agents.a, jobs.a, 'dist', 'second version');
    t.equal(again.artifact?.digest, digestOf('second version'), 'the same job replaced its artifact');
    t.equal(await count(db.pool, 'run_artifacts'), 1);
    t.same(
      (await node.storage.list(`artifacts/org-1/${runId}/`)).objects.map((o) => o.key),
      [`artifacts/org-1/${runId}/${digestOf('second version').slice(7)}.tar.gz`],
      'the replaced object was deleted',
    );

    // Two names with the same content share one object; deleting one keeps it for the other.
    t.ok((await upload(agents.b, jobs.b, 'copy-of-dist', 'second version')).artifact);
    t.equal((await node.storage.list(`artifacts/org-1/${runId}/`)).objects.length, 1, 'identical content, one object');

    // Unknown names and foreign jobs.
    t.match((await download(agents.b, jobs.b, 'nope')).error, { code: 'SVC_ERR_ARTIFACT_NOT_FOUND' });
    t.match((await download(agents.b, jobs.b, 'nope', 'upstream')).error, { code: 'SVC_ERR_ARTIFACT_NO_UPSTREAM' }, 'a run not triggered by a completion has no upstream');
    t.same(await upload(agents.b, jobs.a, 'stolen', 'x'), { code: 'SVC_ERR_ARTIFACT_JOB_NOT_OWNED' }, 'only the agent running the job may upload for it');

    // A size that does not match the PUT: discarded, nothing stored.
    t.same(await upload(agents.a, jobs.a, 'liar', 'twelve bytes', { sizeBytes: 99 }), { code: 'SVC_ERR_ARTIFACT_SIZE_MISMATCH' });
    t.equal(await count(db.pool, 'run_artifact_uploads'), 0);
    t.equal(Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM run_artifacts WHERE name = 'liar'`)), 0);
    t.same((await node.storage.list(`artifacts/org-1/${runId}/tmp/`)).objects, [], 'its temporary object is deleted');

    // A commit without a PUT.
    const requestId = randomUUID();
    agents.a.sendRaw({ type: 'artifact.upload.request', jobId: jobs.a, requestId, name: 'never-put', digest: digestOf('x'), sizeBytes: 1, fileCount: 1 });
    await agents.a.waitFor('artifact.upload.response', (m) => m.requestId === requestId, ANSWER_MS);
    agents.a.sendRaw({ type: 'artifact.commit.request', jobId: jobs.a, requestId });
    t.match((await agents.a.waitFor('artifact.commit.response', (m) => m.requestId === requestId, ANSWER_MS)).error, { code: 'SVC_ERR_ARTIFACT_UPLOAD_MISSING' });
    t.match((await download(agents.b, jobs.b, 'never-put')).error, { code: 'SVC_ERR_ARTIFACT_NOT_FOUND' }, 'an uncommitted upload is never downloadable');
  });
});

t.test('hostile names and limits are refused with nothing stored', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, { SVC_ARTIFACTS_MAX_PER_RUN: '2', SVC_ARTIFACTS_MAX_SIZE_BYTES: '1000', SVC_ARTIFACTS_RETENTION_DAYS: '7' });
    const { runId, jobs, agents } = await runWithAgents(t, node, db, 'h');
    for (const name of ['../escape', 'a/b', 'a\\b', '..', '.hidden', '-flag', 'tab\there', 'nul\u0000', 'x'.repeat(127) + '/']) {
      t.same(await upload(agents.a, jobs.a, name, 'x'), { code: 'SVC_ERR_ARTIFACT_NAME_INVALID' }, `name ${JSON.stringify(name)} refused`);
    }
    t.same(await upload(agents.a, jobs.a, 'big', 'x', { sizeBytes: 1001 }), { code: 'SVC_ERR_ARTIFACT_TOO_LARGE' }, 'over artifacts.maxSizeBytes');
    t.same(await upload(agents.a, jobs.a, 'long-kept', 'x', { retentionDays: 8 }), { code: 'SVC_ERR_ARTIFACT_RETENTION_INVALID' }, 'longer than the retention');
    t.equal(await count(db.pool, 'run_artifact_uploads'), 0, 'no refused upload reserved anything');

    t.ok((await upload(agents.a, jobs.a, 'one', '1', { retentionDays: 2 })).artifact);
    t.ok((await upload(agents.b, jobs.b, 'two', '2')).artifact);
    t.same(await upload(agents.b, jobs.b, 'three', '3'), { code: 'SVC_ERR_ARTIFACT_LIMIT' }, 'over artifacts.maxPerRun');
    t.ok((await upload(agents.a, jobs.a, 'one', 'one again')).artifact, 'replacing an own artifact does not count twice');
    const days = await db.pool.any(sql.unsafe`SELECT name, round(extract(epoch FROM expires_at - created_at) / 86400)::int AS days FROM run_artifacts ORDER BY name`);
    t.same(days, [{ name: 'one', days: 7 }, { name: 'two', days: 7 }], 'configured retention; a step may ask for less');
    t.same((await listRunArtifacts(db.pool, 'org-1', runId)).map((a) => a.name), ['one', 'two']);
  });
});

t.test('relay reads: list with the org checked, chunked bytes that reassemble to the digest', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    const { runId, jobs, agents } = await runWithAgents(t, node, db, 'r');
    const body = Buffer.alloc(ARTIFACT_CHUNK_BYTES * 2 + 12_345);
    for (let i = 0; i < body.length; i += 1) body[i] = (i * 31 + (i >> 9)) & 0xff;
    t.ok((await upload(agents.a, jobs.a, 'big.bin', body)).artifact);

    const listed = await listRunArtifacts(db.pool, 'org-1', runId);
    t.match(listed, [{ name: 'big.bin', digest: digestOf(body), sizeBytes: body.length }]);
    await t.rejects(listRunArtifacts(db.pool, 'org-2', runId), { code: 'SVC_ERR_RUNS_NOT_FOUND' }, 'a run of another org is not found');
    await t.rejects(readArtifactChunk(db.pool, node.storage, 'org-2', runId, 'big.bin', 0), { code: 'SVC_ERR_RUNS_NOT_FOUND' });

    const parts: Buffer[] = [];
    let offset = 0;
    let chunks = 0;
    for (;;) {
      const chunk = await readArtifactChunk(db.pool, node.storage, 'org-1', runId, 'big.bin', offset);
      chunks += 1;
      t.equal(chunk.offset, offset);
      const bytes = Buffer.from(chunk.data, 'base64');
      parts.push(bytes);
      offset += bytes.length;
      if (chunk.done) break;
    }
    t.equal(chunks, 3, 'three chunks of at most 2 MiB');
    t.equal(digestOf(Buffer.concat(parts)), digestOf(body), 'the chunks reassemble to the recorded digest');
    await t.rejects(readArtifactChunk(db.pool, node.storage, 'org-1', runId, 'big.bin', body.length + 1), { code: 'SVC_ERR_ARTIFACT_OFFSET_INVALID' });
    await t.rejects(readArtifactChunk(db.pool, node.storage, 'org-1', runId, '../x', 0), { code: 'SVC_ERR_ARTIFACT_NAME_INVALID' });
    await t.rejects(readArtifactChunk(db.pool, node.storage, 'org-1', runId, 'missing', 0), { code: 'SVC_ERR_ARTIFACT_NOT_FOUND' });
  });
});

t.test('a workflowComplete follow-up downloads from its upstream run', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    const upstream = await runWithAgents(t, node, db, 'up');
    t.ok((await upload(upstream.agents.a, upstream.jobs.a, 'release', 'release bytes')).artifact);

    const follow = await runWithAgents(t, node, db, 'down');
    const eventId = randomUUID();
    await db.pool.query(sql.unsafe`INSERT INTO internal_events (id, name, payload, org_id, source, run_id, processed_at)
      VALUES (${eventId}, 'workflow_complete', ${sql.jsonb({ runId: upstream.runId })}, 'org-1', 'orchestrator', ${upstream.runId}, clock_timestamp())`);
    await db.pool.query(sql.unsafe`UPDATE runs SET triggering_event_id = ${eventId} WHERE id = ${follow.runId}`);

    const auto = await download(follow.agents.a, follow.jobs.a, 'release');
    t.match(auto.artifact, { name: 'release', runId: upstream.runId }, 'not in this run: found in the upstream run');
    t.equal((await fetchBytes(auto.downloadUrl as string)).toString(), 'release bytes');
    t.match((await download(follow.agents.a, follow.jobs.a, 'release', 'upstream')).artifact, { runId: upstream.runId });
    t.match((await download(follow.agents.a, follow.jobs.a, 'release', 'current')).error, { code: 'SVC_ERR_ARTIFACT_NOT_FOUND' }, "from: 'current' does not look upstream");

    // A same-named artifact of this run wins over the upstream one unless upstream is asked for.
    t.ok((await upload(follow.agents.a, follow.jobs.a, 'release', 'local bytes')).artifact);
    t.match((await download(follow.agents.b, follow.jobs.b, 'release')).artifact, { runId: follow.runId });
    t.match((await download(follow.agents.b, follow.jobs.b, 'release', 'upstream')).artifact, { runId: upstream.runId });
  });
});

t.test('retention sweep deletes expired rows and their objects, and stale uploads', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    const { runId, jobs, agents } = await runWithAgents(t, node, db, 's');
    t.ok((await upload(agents.a, jobs.a, 'old', 'old bytes')).artifact);
    t.ok((await upload(agents.a, jobs.a, 'shared-1', 'same bytes')).artifact);
    t.ok((await upload(agents.b, jobs.b, 'shared-2', 'same bytes')).artifact);
    t.ok((await upload(agents.b, jobs.b, 'fresh', 'fresh bytes')).artifact);
    const requestId = randomUUID();
    agents.a.sendRaw({ type: 'artifact.upload.request', jobId: jobs.a, requestId, name: 'crashed', digest: digestOf('half'), sizeBytes: 4, fileCount: 1 });
    const pending = await agents.a.waitFor('artifact.upload.response', (m) => m.requestId === requestId, ANSWER_MS);
    await fetch(pending.uploadUrl as string, { method: 'PUT', body: 'half' });

    const objects = async () => (await node.storage.list(`artifacts/org-1/${runId}/`)).objects.map((o) => o.key).sort();
    const keyOf = (body: string) => `artifacts/org-1/${runId}/${digestOf(body).slice(7)}.tar.gz`;
    t.same(await sweepArtifacts(db.pool, node.storage), { expired: 0, staleUploads: 0, objectsDeleted: 0 }, 'nothing expired yet');

    await db.pool.query(sql.unsafe`UPDATE run_artifacts SET expires_at = clock_timestamp() - interval '1 second' WHERE name IN ('old', 'shared-1')`);
    const swept = await sweepArtifacts(db.pool, node.storage, 0);
    t.same(swept, { expired: 2, staleUploads: 1, objectsDeleted: 1 }, 'two rows expired; only the unshared object went; the crashed upload went');
    t.same((await db.pool.anyFirst(sql.unsafe`SELECT name FROM run_artifacts ORDER BY name`)), ['fresh', 'shared-2']);
    t.same(await objects(), [keyOf('fresh bytes'), keyOf('same bytes')].sort(), "the object shared-2 still uses is kept; the crashed upload's temporary object is gone");
    t.match((await download(agents.b, jobs.b, 'old')).error, { code: 'SVC_ERR_ARTIFACT_NOT_FOUND' });

    // An expired row the sweep has not reached yet is already invisible.
    await db.pool.query(sql.unsafe`UPDATE run_artifacts SET expires_at = clock_timestamp() - interval '1 second' WHERE name = 'fresh'`);
    t.match((await download(agents.b, jobs.b, 'fresh')).error, { code: 'SVC_ERR_ARTIFACT_NOT_FOUND' });
    t.same((await listRunArtifacts(db.pool, 'org-1', runId)).map((a) => a.name), ['shared-2']);

    // A stored object that vanished is reported, not handed out.
    await node.storage.delete(keyOf('same bytes'));
    t.match((await download(agents.b, jobs.b, 'shared-2')).error, { code: 'SVC_ERR_ARTIFACT_OBJECT_MISSING' });
  });
});
