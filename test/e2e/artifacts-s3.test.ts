// Run artifacts end to end with SVC_STORAGE_TYPE=s3 against s3rver over HTTP
// (test/fixtures/s3-server.ts checks the pre-signed signatures), REAL processes: the flow of
// test/fixtures/artifacts-e2e.ts, with the agent and storage talking directly through pre-signed
// URLs and nothing stored on the orchestrator's disk.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { Value } from 'typebox/value';
import { S3StorageConfig } from '../../plugins/storage/s3/index.ts';
import { S3Storage } from '../../plugins/storage/s3/storage.ts';
import { artifactsFlow } from '../fixtures/artifacts-e2e.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { startJobsStack } from '../fixtures/jobs-stack.ts';
import { startS3Server } from '../fixtures/s3-server.ts';

// Two database variants of a whole stack each; generous for a machine whose cores are busy.
t.setTimeout(2_400_000);

await eachDatabase(t, async (t, db) => {
  const s3 = await startS3Server({ bucket: 'svc-artifacts-e2e' });
  t.teardown(() => s3.stop());
  const stack = await startJobsStack(t, db, { orchestratorEnv: s3.env() });
  const bucket = new S3Storage(Value.Default(S3StorageConfig, s3.pluginConfig()) as S3StorageConfig);
  t.teardown(() => bucket.close());
  await artifactsFlow(t, stack, bucket);
  const artifactRequests = s3.requests.filter((r) => r.key.startsWith('artifacts/'));
  t.ok(artifactRequests.some((r) => r.method === 'PUT' && r.auth === 'presigned'), 'the agent PUT the artifact through a pre-signed URL');
  t.ok(artifactRequests.some((r) => r.method === 'GET' && r.auth === 'presigned'), 'the agent GOT it through a pre-signed URL');
  t.notOk(existsSync(join(stack.root, 'orch', 'storage', 'artifacts')), 'nothing on the orchestrator disk');
});
