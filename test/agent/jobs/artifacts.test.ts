// The agent's artifact functions (agent/jobs/artifacts.ts) against a real orchestrator (real
// PostgreSQL, filesystem storage over HTTP), speaking the real protocol through a test agent's
// socket: a directory round trip with the digest checked; hostile names, paths, symlinks and
// archives refused with nothing stored or extracted; a tampered stored object refused on
// download; the size limit.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { downloadArtifact, uploadArtifact } from '../../../agent/jobs/artifacts.ts';
import type { OrchestratorRequest } from '../../../agent/jobs/runner-api.ts';
import type { OrchestratorToAgent } from '../../../schemas/wire/agent.ts';
import { sql } from '../../../kernel/services/db/index.ts';
import { runWithAgents, startArtifactsNode } from '../../fixtures/artifacts-node.ts';
import { eachDatabase, type Test } from '../../fixtures/db.ts';
import type { TestAgent } from '../../fixtures/test-agent.ts';
import { tempDir } from '../fixtures/trees.ts';


const RESPONSE_OF: Record<string, OrchestratorToAgent['type']> = {
  'artifact.upload.request': 'artifact.upload.response',
  'artifact.commit.request': 'artifact.commit.response',
  'artifact.download.request': 'artifact.download.response',
};

/** The agent's request function over a test agent's real socket; records what was sent. */
function requester(agent: TestAgent, sent: string[]): OrchestratorRequest {
  return async (message) => {
    sent.push(message.type);
    agent.sendRaw(message);
    const type = RESPONSE_OF[message.type];
    if (type === undefined) throw new Error(`no response type for ${message.type}`);
    // A hang guard far above any answer time on a busy machine.
    return agent.waitFor(type, (m) => (m as { requestId?: string }).requestId === message.requestId, 300_000);
  };
}

async function workspaceFor(t: Test, name: string) {
  const tmp = await tempDir(`svc-artifacts-${name}-`);
  t.teardown(tmp.cleanup);
  const workspace = join(tmp.dir, 'ws');
  const scratch = join(tmp.dir, 'scratch');
  await mkdir(workspace, { recursive: true });
  await mkdir(scratch, { recursive: true });
  return { root: tmp.dir, workspace, scratch };
}

// A hand-made ustar entry (node-tar will not write hostile entries, which is the point).
function header(name: string, type: string, size: number, linkname = ''): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100);
  h.write('0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(size.toString(8).padStart(11, '0') + '\0', 124);
  h.write('00000000000\0', 136);
  h.write('        ', 148);
  h.write(type, 156);
  h.write(linkname, 157, 100);
  h.write('ustar\0', 257);
  h.write('00', 263);
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  return h;
}
function hostileArchive(): Buffer {
  const body = Buffer.from('pwned\n');
  return gzipSync(Buffer.concat([header('ok.txt', '0', 0), header('../escaped.txt', '0', body.length), body, Buffer.alloc(512 - body.length), Buffer.alloc(1024)]));
}

await eachDatabase(t, async (t, db) => {
  const artifactRows = async () => Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM run_artifacts`));

  await t.test('round trip between two jobs; tampered object refused; hostile input refused', async (t) => {
    const node = await startArtifactsNode(t, db.url);
    const { jobs, agents } = await runWithAgents(t, node, db, `rt-${randomUUID().slice(0, 8)}`);
    const a = await workspaceFor(t, 'a');
    const b = await workspaceFor(t, 'b');
    const sentA: string[] = [];
    const sentB: string[] = [];
    const signal = new AbortController().signal;
    const ctxA = { jobId: jobs.a, workspace: a.workspace, scratch: a.scratch, request: requester(agents.a, sentA), signal };
    const ctxB = { jobId: jobs.b, workspace: b.workspace, scratch: b.scratch, request: requester(agents.b, sentB), signal };

    await mkdir(join(a.workspace, 'dist/sub'), { recursive: true });
    await writeFile(join(a.workspace, 'dist/app.js'), 'console.log(1)\n');
    await writeFile(join(a.workspace, 'dist/sub/data.json'), '{"n":1}\n');
    await symlink('app.js', join(a.workspace, 'dist/alias.js'));
    const up = await uploadArtifact(ctxA, 'dist', ['dist']);
    t.match(up, { name: 'dist', digest: /^sha256:[0-9a-f]{64}$/, fileCount: 3 }, 'two files and an inside link');
    t.same(sentA, ['artifact.upload.request', 'artifact.commit.request']);

    const down = await downloadArtifact(ctxB, 'dist', 'in');
    t.same(down, { path: join(b.workspace, 'in'), digest: up.digest, fileCount: 3 });
    t.equal(await readFile(join(b.workspace, 'in/dist/sub/data.json'), 'utf8'), '{"n":1}\n');
    t.equal(await readFile(join(b.workspace, 'in/dist/alias.js'), 'utf8'), 'console.log(1)\n', 'the inside link survives');
    const defaultDest = await downloadArtifact(ctxB, 'dist');
    t.equal(defaultDest.path, b.workspace, 'default destination: the workspace root');
    t.ok(existsSync(join(b.workspace, 'dist/app.js')));

    // Hostile names: refused before anything is packed or sent.
    sentA.length = 0;
    for (const name of ['../x', 'a/b', '', '.', '..', '.env', 'x'.repeat(129), 'bell\u0007', 'new\nline']) {
      await t.rejects(uploadArtifact(ctxA, name, ['dist']), { code: 'SVC_ERR_ARTIFACT_NAME_INVALID' }, `name ${JSON.stringify(name)}`);
      await t.rejects(downloadArtifact(ctxB, name), { code: 'SVC_ERR_ARTIFACT_NAME_INVALID' });
    }
    t.same(sentA, [], 'no hostile name reached the orchestrator');

    // Hostile paths: outside the workspace, through a symlink, a link inside a packed directory.
    await writeFile(join(a.root, 'secret.txt'), 'outside\n');
    await symlink(a.root, join(a.workspace, 'up'));
    await mkdir(join(a.workspace, 'sneaky'));
    await symlink('../../secret.txt', join(a.workspace, 'sneaky/link'));
    for (const paths of [['../secret.txt'], [join(a.root, 'secret.txt')], ['up/secret.txt'], ['up'], ['missing-dir'], ['']]) {
      await t.rejects(uploadArtifact(ctxA, 'evil', paths), { code: 'SVC_ERR_AGENT_API_PATH' }, `paths ${JSON.stringify(paths)}`);
    }
    await t.rejects(uploadArtifact(ctxA, 'evil', ['sneaky']), { code: 'SVC_ERR_AGENT_ARCHIVE_HOSTILE' }, 'a packed link pointing out of the tree');
    await t.rejects(downloadArtifact(ctxB, 'dist', '../elsewhere'), { code: 'SVC_ERR_AGENT_API_PATH' });
    await symlink(b.root, join(b.workspace, 'out-link'));
    await t.rejects(downloadArtifact(ctxB, 'dist', 'out-link/x'), { code: 'SVC_ERR_AGENT_API_PATH' }, 'a destination through a symlink out of the workspace');
    t.same(sentA, [], 'no hostile path reached the orchestrator');
    t.equal(await artifactRows(), 1, 'only the good artifact is stored');

    // A stored object altered after upload: refused on the digest, nothing extracted.
    const row = (await db.pool.one(sql.unsafe`SELECT object_key FROM run_artifacts WHERE name = 'dist'`)) as { object_key: string };
    const original = Buffer.concat(await (await node.storage.get(row.object_key)).toArray());
    const tampered = Buffer.from(original);
    tampered[20] = tampered[20]! ^ 0x01;
    await node.storage.put(row.object_key, tampered);
    await t.rejects(downloadArtifact(ctxB, 'dist', 'tampered'), { code: 'SVC_ERR_AGENT_ARTIFACT_DIGEST', message: /altered or damaged, nothing was extracted/ });
    t.notOk(existsSync(join(b.workspace, 'tampered')) && (await readdir(join(b.workspace, 'tampered'))).length > 0, 'nothing extracted');

    // A hostile archive uploaded through the protocol with its true digest: the digest passes,
    // extraction refuses it whole.
    const hostile = hostileArchive();
    const { createHash } = await import('node:crypto');
    const requestId = randomUUID();
    const response = (await ctxA.request({
      type: 'artifact.upload.request',
      jobId: jobs.a,
      requestId,
      name: 'hostile',
      digest: `sha256:${createHash('sha256').update(hostile).digest('hex')}`,
      sizeBytes: hostile.length,
      fileCount: 2,
    })) as { uploadUrl?: string };
    t.equal((await fetch(response.uploadUrl!, { method: 'PUT', body: hostile })).status, 200);
    t.ok(((await ctxA.request({ type: 'artifact.commit.request', jobId: jobs.a, requestId })) as { artifact?: unknown }).artifact);
    await t.rejects(downloadArtifact(ctxB, 'hostile', 'h'), { code: 'SVC_ERR_AGENT_ARCHIVE_HOSTILE' });
    t.notOk(existsSync(join(b.workspace, 'h/ok.txt')), 'not even the harmless entry was extracted');
    t.notOk(existsSync(join(b.workspace, 'escaped.txt')));
  });

  await t.test('the size limit is the orchestrator’s; over it nothing is stored', async (t) => {
    const node = await startArtifactsNode(t, db.url, { SVC_ARTIFACTS_MAX_SIZE_BYTES: '2000' });
    const { jobs, agents } = await runWithAgents(t, node, db, `lim-${randomUUID().slice(0, 8)}`);
    const a = await workspaceFor(t, 'limit');
    const ctx = { jobId: jobs.a, workspace: a.workspace, scratch: a.scratch, request: requester(agents.a, []), signal: new AbortController().signal };
    const before = await artifactRows();
    await writeFile(join(a.workspace, 'random.bin'), (await import('node:crypto')).randomBytes(10_000));
    await t.rejects(uploadArtifact(ctx, 'big', ['random.bin']), { code: 'SVC_ERR_ARTIFACT_TOO_LARGE', message: /artifacts\.maxSizeBytes/ });
    await t.rejects(uploadArtifact(ctx, 'kept-long', ['random.bin'], { retentionDays: 0 }), { code: 'SVC_ERR_AGENT_API_ARGS' });
    await writeFile(join(a.workspace, 'small.txt'), 'small\n');
    t.ok(await uploadArtifact(ctx, 'small', ['small.txt']));
    t.equal(await artifactRows(), before + 1);
  });
});
